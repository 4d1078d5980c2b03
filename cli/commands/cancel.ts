import type { Command } from 'commander';
import { ACTIVE_STATUSES } from '../../src/model/status.ts';
import { examples } from '../args.ts';
import type { Context } from '../context.ts';
import { CliError } from '../errors.ts';
import { EXIT } from '../exit-codes.ts';

export function registerCancel(program: Command, ctx: Context): void {
  program
    .command('cancel')
    .description('cancel a queued, fetching or processing conversion')
    .argument('<id>', 'conversion id (cnv_…)')
    .addHelpText('after', `
Unlike \`conv delete\`, cancel never touches a finished result: a conversion that already ended is
reported (exit 1) and left as it is. Nothing is charged for a cancelled conversion.
${examples([
  ['conv cancel cnv_01J9Z3', 'stop a conversion and release its reserved credits'],
])}`)
    .action(async (id: string) => {
      const client = await ctx.client({ allowLocal: false });
      // DELETE on a succeeded conversion deletes its result: look first, so "cancel" cannot.
      const current = await client.getConversion(id);
      if (!ACTIVE_STATUSES.has(current.status)) {
        throw new CliError(
          EXIT.error, 'invalid_state', `${id} is ${current.status}: only queued, fetching or processing conversions can be cancelled`,
          current.status === 'succeeded' ? 'to delete its result, run `conv delete ' + id + '`' : undefined,
        );
      }
      const conversion = await client.deleteConversion(id);
      const out = ctx.output;
      if (out.mode.json) out.json(conversion);
      else {
        const { colorStatus } = await import('../render.ts');
        out.line(`${conversion.id} ${colorStatus(conversion.status, out.out)}`);
      }
    });
}
