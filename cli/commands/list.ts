import { Option, type Command } from 'commander';
import type { PublicConversion } from '../../src/model/conversion.ts';
import { STATUSES, type ConversionStatus } from '../../src/model/status.ts';
import { examples, integerIn } from '../args.ts';
import type { Context } from '../context.ts';

interface ListOptions {
  status?: ConversionStatus;
  limit?: number;
  cursor?: string;
  all?: boolean;
}

export function registerList(program: Command, ctx: Context): void {
  program
    .command('list')
    .description('list your conversions, newest first')
    .addOption(new Option('--status <status>', 'only conversions in this status').choices(STATUSES))
    .option('--limit <n>', 'page size, 1 to 100 (server default 20)', integerIn(1, 100))
    .option('--cursor <cursor>', 'continue from the next_cursor of an earlier page')
    .option('--all', 'follow next_cursor through every page (with --json: one conversion per line, NDJSON)')
    .addHelpText('after', examples([
      ['conv list', 'the 20 newest conversions'],
      ['conv list --status failed --all', 'every failed conversion'],
      ["conv list --all --json | jq -r 'select(.status==\"succeeded\") | .id'", 'NDJSON, one object per line'],
      ['conv list --json --limit 100', 'one page as the API returns it ({data, next_cursor})'],
    ]))
    .action(async (options: ListOptions) => {
      const client = await ctx.client({ allowLocal: false });
      const out = ctx.output;
      const query = { status: options.status, limit: options.limit };
      if (!options.all) {
        const page = await client.listConversions({ ...query, cursor: options.cursor });
        if (out.mode.json) return out.json(page);
        await printRows(ctx, page.data);
        if (page.next_cursor) out.note(out.err.dim(`more: conv list --cursor ${page.next_cursor}${options.status ? ` --status ${options.status}` : ''} (or --all)`));
        return;
      }
      // Pages are printed as they arrive: a long history starts showing at once.
      let cursor = options.cursor;
      const rows: PublicConversion[] = [];
      do {
        const page = await client.listConversions({ ...query, cursor });
        if (out.mode.json) for (const conversion of page.data) out.jsonLine(conversion);
        else rows.push(...page.data);
        cursor = page.next_cursor ?? undefined;
      } while (cursor);
      if (!out.mode.json) await printRows(ctx, rows);
    });
}

async function printRows(ctx: Context, conversions: PublicConversion[]): Promise<void> {
  const out = ctx.output;
  if (out.mode.quiet) {
    for (const conversion of conversions) out.essential(conversion.id);
    return;
  }
  if (conversions.length === 0) return out.note('no conversions');
  const { CONVERSION_HEADERS, conversionRows } = await import('../render.ts');
  out.table(CONVERSION_HEADERS, conversionRows(conversions, out.out));
}
