import { Option, type Command } from 'commander';
import { examples, integerIn, keyValue, seconds } from '../args.ts';
import type { Context } from '../context.ts';
import type { ConvertOptions } from '../convert-run.ts';

export function registerConvert(program: Command, ctx: Context): void {
  program
    .command('convert')
    .description('convert files: upload (or pass a URL), optionally wait, and download the result')
    .argument('<inputs...>', 'files, http(s) URLs the server downloads, or - for stdin')
    .requiredOption('-t, --to <format>', 'target format, e.g. webp')
    .option('-f, --from <format>', 'source format, when the name does not tell it (required for -)')
    .option('-O, --option <key=value>', 'a conversion option, repeatable (see `conv formats <source>`); one that names a file (watermark_image=logo.png) takes a path, and that file is sent with the input', keyValue)
    .option('--variant <variant>', 'mode, for conversions that have several')
    .addOption(new Option('-w, --wait [seconds]', 'wait for the end state; with seconds, give up after that long (exit 6)').argParser(seconds))
    .option('-o, --output <path>', 'write the result to a file, a directory, or - for stdout (implies --wait)')
    .option('--callback <url>', 'https URL that receives a webhook when the conversion ends')
    .option('--idempotency-key <key>', 'makes a retried submission safe (generated when omitted); with several inputs, -1, -2, … are appended')
    .option('-j, --concurrency <n>', 'conversions run at once with several inputs', integerIn(1, 64), 4)
    .option('--unzip', 'a result of several files (a split, every page) comes as a zip: unpack it into the -o directory')
    .addHelpText('after', `
Without --wait and -o, submits and prints the conversion (status queued). -o waits for the end
state and downloads; --wait alone waits and prints the finished conversion. The API holds a
request at most 30 s; longer waits are made of repeated requests. With no server configured,
the conversion runs in-process on this machine and the result is always written (to -o, else
into the current directory), since nothing is kept after the command ends.

Exit codes: 0 ok, 1 error, 2 usage, 3 auth, 4 not found, 5 conversion failed or cancelled,
6 --wait ran out, 7 limits (429, 413), 8 credits (402). With several inputs the first failing
input (in argument order) decides the code.
${examples([
  ['conv convert photo.heic --to jpg -o photo.jpg', 'convert and download'],
  ['conv convert *.png --to webp -O quality=80 -o out/', 'several files at once into a directory'],
  ['conv convert in.mov --to mp4 --wait 600 -o out.mp4', 'CI: give up (exit 6) after 10 minutes'],
  ['cat scan.tiff | conv convert - --from tiff --to pdf -o - > scan.pdf', 'stdin to stdout'],
  ['conv convert report.pdf --to png -O pages=all --unzip -o pages/', 'every page as an image, unpacked'],
  ['conv convert draft.pdf --to pdf -O watermark_text=DRAFT -O page_numbers="{n} / {total}" -o out.pdf', 'PDF operations are options of pdf -> pdf'],
  ['conv convert https://example.com/a.png --to avif --json', 'let the server fetch a URL; print the queued conversion'],
  ['id=$(conv convert big.wav --to mp3 -q) && conv get "$id"', 'submit now, look later'],
])}`)
    .action(async (inputArgs: string[], options: ConvertOptions) => {
      // The work (inputs, uploads, waiting, downloads) loads only when a conversion is asked for.
      const { runConvert } = await import('../convert-run.ts');
      await runConvert(ctx, inputArgs, options);
    });
}
