import { mkdir, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { examples, integerIn, keyValue } from '../args.ts';
import type { Context } from '../context.ts';
import { usageError } from '../errors.ts';

interface WatchOptions {
  to: string;
  out?: string;
  option?: [string, string][];
  variant?: string;
  concurrency: number;
  settle: number;
  initial: boolean;
}

export function registerWatch(program: Command, ctx: Context): void {
  program
    .command('watch')
    .description('convert files in a directory as they appear or change')
    .argument('<dir>', 'the directory to watch (with its subdirectories)')
    .requiredOption('-t, --to <format>', 'target format, e.g. webp')
    .option('--out <dir>', 'write results here, mirroring subdirectories (created if missing; default: beside each file)')
    .option('-O, --option <key=value>', 'a conversion option, repeatable (see `conv formats <source>`)', keyValue)
    .option('--variant <variant>', 'mode, for conversions that have several')
    .option('-j, --concurrency <n>', 'files converted at once', integerIn(1, 64), 2)
    .option('--settle <ms>', 'how long a file must stay unchanged before it is converted', integerIn(10, 600_000), 500)
    .option('--no-initial', 'ignore files already there at start (default: convert those whose result is missing or older)')
    .addHelpText('after', `
A file is converted once it has stopped changing (--settle), and again whenever it changes.
Results are named after the input with the target's extension (photo.png -> photo.webp),
beside it or under --out. Never taken as inputs: the results this command writes, anything
under --out, dotfiles and partial downloads (*.part, *.tmp, *.crdownload, *~). Files of a
format that cannot become the target are skipped with a note. A file that fails is reported
(error: <code>: <file>: …) and the watch goes on.
With no server configured, conversions run in-process; otherwise on the server (the files are
uploaded; the results downloaded).

Output: one line per converted file; with --json one conversion object per line (NDJSON) as the
API returns it at its end state, failed ones included (their error also goes to stderr).
Ctrl-C (or SIGTERM) stops watching and waits for the conversions in flight to finish: exit 0.
A second Ctrl-C cancels them (on a server: DELETE, nothing charged) and exits 130.
${examples([
  ['conv watch inbox --to webp --out outbox', 'convert every image dropped into inbox/'],
  ['conv watch scans --to pdf --variant a4 -O margin=36', 'A4 PDFs beside the scans'],
  ['conv watch media --to mp4 --json | jq -r .result.filename', 'NDJSON for scripts'],
  ['CONV_BASE_URL=https://convd.example.com/v1 conv watch in --to avif --out out', 'on a server'],
])}`)
    .action(async (dirArg: string, options: WatchOptions) => {
      const dir = resolve(ctx.io.cwd, dirArg);
      const info = await stat(dir).catch(() => null);
      if (!info?.isDirectory()) throw usageError(`not a directory: ${dirArg}`);
      const outDir = options.out === undefined ? dir : resolve(ctx.io.cwd, options.out);
      if (options.out !== undefined) await mkdir(outDir, { recursive: true });
      const client = await ctx.client({ allowLocal: true, localWorkers: options.concurrency });
      const { WatchSession } = await import('../watch/session.ts');
      const session = new WatchSession(ctx, client, {
        dir,
        outDir,
        target: options.to.trim().toLowerCase(),
        options: options.option ?? [],
        variant: options.variant,
        concurrency: options.concurrency,
        settleMs: options.settle,
        initial: options.initial,
        local: ctx.isLocal(),
      });
      await session.preflight();
      const code = await session.run();
      ctx.fail(code);
    });
}
