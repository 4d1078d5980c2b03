import type { Command } from 'commander';
import { examples } from '../args.ts';
import type { Context } from '../context.ts';

export function registerGet(program: Command, ctx: Context): void {
  program
    .command('get')
    .description('show one conversion')
    .argument('<id>', 'conversion id (cnv_…)')
    .addHelpText('after', examples([
      ['conv get cnv_01J9Z3', 'status, result and error of a conversion'],
      ["conv get cnv_01J9Z3 --json | jq -r .status", 'the API object, for scripts'],
    ]))
    .action(async (id: string) => {
      const client = await ctx.client({ allowLocal: false });
      const conversion = await client.getConversion(id);
      const out = ctx.output;
      if (out.mode.json) return out.json(conversion);
      if (out.mode.quiet) return;
      const { renderConversion } = await import('../render.ts');
      out.stdout.write(renderConversion(conversion, out.out));
    });
}
