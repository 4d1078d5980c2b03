import { Option, type Command } from 'commander';
import { examples, keyValue, seconds } from '../args.ts';
import type { Context } from '../context.ts';
import type { MergeOptions } from '../merge-run.ts';

export function registerMerge(program: Command, ctx: Context): void {
  program
    .command('merge')
    .description('merge files into one PDF, in the order given: PDFs, images, text, office documents, ...')
    .argument('<inputs...>', 'two or more files (at most 50); each that is not a PDF is converted to one first')
    .requiredOption('-o, --output <path>', 'the merged PDF: a file, a directory (merged.pdf in it), or - for stdout')
    .option('-O, --option <key=value>', 'a pdf -> pdf option for the merged file, repeatable (page_numbers, watermark_text, merge_order=name, ...); watermark_image=PATH sends that image with the files', keyValue)
    .option('--variant <variant>', 'compress (default) or linearize')
    .addOption(new Option('-w, --wait [seconds]', 'give up after this long (exit 6); default: wait for the end').argParser(seconds))
    .option('--idempotency-key <key>', 'makes a retried submission safe (generated when omitted)')
    .addHelpText('after', `
One conversion on the server (or in-process): the files are uploaded together, each converted to
PDF by its own engine (a docx by LibreOffice, a PNG as a page of its size), merged in the order
given (-O merge_order=name: by file name), then the pdf -> pdf options run on the whole. Its
credits are the merge's weight and each file's own conversion to PDF.
${examples([
  ['conv merge a.pdf b.docx c.png -o all.pdf', 'three kinds of file, one PDF'],
  ['conv merge scans/*.jpg -O merge_order=name -O "page_numbers={n} / {total}" -o scans.pdf', 'numbered, in name order'],
  ['conv merge cover.pdf report.pdf -O encrypt_user_password=s3cret -o out/', 'encrypted, as out/merged.pdf'],
])}`)
    .action(async (inputArgs: string[], options: MergeOptions) => {
      const { runMerge } = await import('../merge-run.ts');
      await runMerge(ctx, inputArgs, options);
    });
}
