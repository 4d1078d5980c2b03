import type { Command } from 'commander';
import { examples } from '../args.ts';
import type { Context } from '../context.ts';

export function registerDelete(program: Command, ctx: Context): void {
  program
    .command('delete')
    .description('delete a result before it expires, or cancel a conversion still running')
    .argument('<id>', 'conversion id (cnv_…)')
    .addHelpText('after', `
A succeeded conversion has its result files deleted and becomes "expired"; a queued, fetching or
processing one is cancelled. Failed, cancelled and expired conversions cannot be deleted (exit 1).
${examples([
  ['conv delete cnv_01J9Z3', 'delete the result now instead of after 24 hours'],
])}`)
    .action(async (id: string) => {
      const client = await ctx.client({ allowLocal: false });
      const conversion = await client.deleteConversion(id);
      const out = ctx.output;
      if (out.mode.json) return out.json(conversion);
      const { colorStatus } = await import('../render.ts');
      out.line(`${conversion.id} ${colorStatus(conversion.status, out.out)}${conversion.status === 'expired' ? ' (result deleted)' : ''}`);
    });
}
