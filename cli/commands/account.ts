import type { Command } from 'commander';
import { examples } from '../args.ts';
import type { Context } from '../context.ts';

export function registerAccount(program: Command, ctx: Context): void {
  program
    .command('account')
    .description('show the plan, credits and limits of the API key\'s account')
    .addHelpText('after', examples([
      ['conv account', 'plan, remaining credits, limits and active conversions'],
      ['conv account --json | jq .credits.remaining', 'the API object'],
    ]))
    .action(async () => {
      const client = await ctx.client({ allowLocal: false });
      const account = await client.getAccount();
      const out = ctx.output;
      if (out.mode.json) return out.json(account);
      if (out.mode.quiet) return;
      const { renderAccount } = await import('../render.ts');
      out.stdout.write(renderAccount(account, out.out));
    });
}
