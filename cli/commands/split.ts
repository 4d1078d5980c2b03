import type { Command } from 'commander';
import { examples, integerIn, keyValue } from '../args.ts';
import type { Context } from '../context.ts';
import { usageError } from '../errors.ts';

interface SplitOptions {
  every?: number;
  ranges?: string;
  option?: [string, string][];
  output?: string;
}

export function registerSplit(program: Command, ctx: Context): void {
  program
    .command('split')
    .description('split a PDF into parts of N pages or given ranges, each part a PDF in the -o directory')
    .argument('<input>', 'a PDF file or an http(s) URL the server downloads')
    .option('--every <n>', 'parts of this many pages', integerIn(1, 100_000))
    .option('--ranges <list>', 'one part per range, e.g. 1-3,4-9,10')
    .option('-O, --option <key=value>', 'another pdf -> pdf option, repeatable (password, encrypt_user_password, watermark_text, ...)', keyValue)
    .option('-o, --output <dir>', 'directory for the parts (created when it ends with /; default: the current directory)')
    .addHelpText('after', `
The same as \`conv convert <input> --to pdf -O split_every=N --unzip -o <dir>\`: the server
writes the parts as one zip, which is unpacked here (pages-01-05.pdf, pages-06-10.pdf, ...). A
split into one part is that PDF itself. Other options apply to every part (each is encrypted,
watermarked, ... as the whole would be).
${examples([
  ['conv split big.pdf --every 1 -o pages/', 'one PDF per page'],
  ['conv split book.pdf --ranges 1-12,13-40,41-90 -o chapters/', 'given parts, in that order'],
  ['conv split scan.pdf --every 10 -O encrypt_user_password=s3cret -o out/', 'parts of 10 pages, each encrypted'],
])}`)
    .action(async (input: string, options: SplitOptions) => {
      if ((options.every === undefined) === (options.ranges === undefined)) throw usageError('give one of --every <n> and --ranges <list>');
      const split: [string, string] = options.every !== undefined ? ['split_every', String(options.every)] : ['split_ranges', options.ranges!];
      const { runConvert } = await import('../convert-run.ts');
      await runConvert(ctx, [input], {
        to: 'pdf', option: [...(options.option ?? []), split], output: dirOf(options.output), unzip: true, concurrency: 1,
      });
    });
}

/** -o names a directory here, existing or not. */
function dirOf(output: string | undefined): string {
  if (output === undefined) return '.';
  return output.endsWith('/') || output === '.' || output === '..' ? output : `${output}/`;
}
