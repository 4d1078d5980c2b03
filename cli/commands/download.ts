import type { Command } from 'commander';
import { examples } from '../args.ts';
import type { Context } from '../context.ts';
import { usageError } from '../errors.ts';

export function registerDownload(program: Command, ctx: Context): void {
  program
    .command('download')
    .description('download the result of a succeeded conversion')
    .argument('<id>', 'conversion id (cnv_…)')
    .option('-o, --output <path>', 'file, directory, or - for stdout (default: the result\'s name in the current directory)')
    .addHelpText('after', `
The file is written to a temporary name beside the target and renamed when complete: an
interrupted download never leaves a partial file behind. An existing file is replaced.
With --json, prints {"id","path","filename","size"} of what was written.
${examples([
  ['conv download cnv_01J9Z3', 'save as the result\'s own file name'],
  ['conv download cnv_01J9Z3 -o out/', 'into a directory (created if missing)'],
  ['conv download cnv_01J9Z3 -o - | exiftool -', 'stream to stdout'],
])}`)
    .action(async (id: string, options: { output?: string }) => {
      const out = ctx.output;
      if (options.output === '-' && out.mode.json) throw usageError('--json and -o - both want stdout: choose one');
      const [{ resolveDestination, saveDownload }, { formatBytes }] = await Promise.all([import('../save.ts'), import('../render.ts')]);
      const destination = await resolveDestination(options.output, ctx.io.cwd);
      const client = await ctx.client({ allowLocal: false });
      const download = await client.download(id);
      const path = await saveDownload(download, destination, ctx.io.stdout);
      if (out.mode.json) out.json({ id, path, filename: download.filename, size: download.size });
      else if (path) out.line(`${path} (${formatBytes(download.size)})`);
    });
}
