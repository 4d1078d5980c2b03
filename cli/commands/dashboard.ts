import type { Command } from 'commander';
import { examples } from '../args.ts';
import { colorsFor } from '../colors.ts';
import type { Context } from '../context.ts';
import { usageError } from '../errors.ts';

export const DASHBOARD_NO_SERVER_HINT = `start a convd and point conv at it:
  npm start                                        (in a convd checkout; or: convd serve)
  conv config set base-url http://127.0.0.1:7700/v1
  conv config set api-key cvk_…                    (shown by convd's first start, or in DATA_DIR/first-api-key)
or pass --base-url and --api-key (env CONV_BASE_URL, CONV_API_KEY)`;

export function registerDashboard(program: Command, ctx: Context): void {
  program
    .command('dashboard')
    .description('a live terminal view of the account and its conversions')
    .addHelpText('after', `
Shows the plan, credits and limits of the account, and its newest conversions with their status
and progress, refreshed about every second (slower when the plan allows few requests a minute).
Keys: ↑/↓ (or k/j) select · enter details (esc back) · x cancel the selected conversion ·
d download its result into the current directory · a all, u queued, p processing,
s succeeded, f failed, c cancelled (←/→ or tab: every status) · r refresh · q quit.
Needs a convd (there is nothing to show in-process) and a terminal: in scripts use
\`conv list\` and \`conv account\`. Exit 0 on q, Ctrl-C or SIGTERM; 2 without a server or terminal.
${examples([
  ['conv dashboard', 'the configured server'],
  ['conv dashboard --profile prod', 'another profile\'s server'],
])}`)
    .action(async () => {
      if (ctx.isLocal()) {
        throw usageError('conv dashboard shows a convd\'s conversions, and no server is configured', DASHBOARD_NO_SERVER_HINT, 'no_server');
      }
      const { stdin, stdout, stderr } = ctx.io;
      if (!stdout.isTTY || !stdin.isTTY) {
        throw usageError('conv dashboard needs a terminal (stdin and stdout)', 'in scripts and pipes use `conv list` and `conv account`');
      }
      const client = await ctx.client({ allowLocal: false });
      const { runDashboard } = await import('../dashboard/run.tsx');
      await runDashboard({
        client,
        server: ctx.settings().baseUrl!.value,
        cwd: ctx.io.cwd,
        color: colorsFor(stdout, ctx.io.env).enabled,
        stdout: stdout as NodeJS.WriteStream,
        stdin: stdin as NodeJS.ReadStream,
        stderr: stderr as NodeJS.WriteStream,
      });
    });
}
