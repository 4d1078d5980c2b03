import type { Command } from 'commander';
import { examples } from '../args.ts';
import type { Context } from '../context.ts';

export function registerFormats(program: Command, ctx: Context): void {
  program
    .command('formats')
    .description('list the supported conversions, or the targets, options and variants of one source format')
    .argument('[source]', 'a source format, e.g. png')
    .addHelpText('after', `
With no server configured this lists what this machine converts in-process.
${examples([
  ['conv formats', 'every source format and its targets'],
  ['conv formats png', 'targets of png with their options (-O name=value), variants and credit weights'],
  ['conv formats --json', 'the API object ({data: [{source, targets}]})'],
])}`)
    .action(async (source: string | undefined) => {
      const client = await ctx.client({ allowLocal: true });
      const out = ctx.output;
      if (source === undefined) {
        const listing = await client.listFormats();
        if (out.mode.json) return out.json(listing);
        if (out.mode.quiet) return;
        const { renderFormatListing } = await import('../render.ts');
        out.stdout.write(renderFormatListing(listing, out.out));
        return;
      }
      const details = await client.getFormat(source);
      if (out.mode.json) return out.json(details);
      if (out.mode.quiet) return;
      const { renderFormatDetails } = await import('../render.ts');
      out.stdout.write(renderFormatDetails(details, out.out));
    });
}
