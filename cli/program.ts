import { Command } from 'commander';
import { examples } from './args.ts';
import { registerAccount } from './commands/account.ts';
import { registerCancel } from './commands/cancel.ts';
import { registerCompletion } from './commands/completion.ts';
import { registerConfig } from './commands/config.ts';
import { registerConvert } from './commands/convert.ts';
import { registerDashboard } from './commands/dashboard.ts';
import { registerDelete } from './commands/delete.ts';
import { registerDownload } from './commands/download.ts';
import { registerFormats } from './commands/formats.ts';
import { registerGet } from './commands/get.ts';
import { registerList } from './commands/list.ts';
import { registerMerge } from './commands/merge.ts';
import { registerSplit } from './commands/split.ts';
import { registerWatch } from './commands/watch.ts';
import { registerWebhook } from './commands/webhook.ts';
import type { Context } from './context.ts';
import { readVersion } from './version.ts';

/**
 * The `conv` program. Command modules register options and help only; whatever is heavy (got,
 * conf, the in-process service) is imported inside the action that needs it, so `conv --help`
 * or `conv completion` never load it.
 */
export function buildProgram(ctx: Context): Command {
  const { stdout, stderr } = ctx.io;
  const program = new Command('conv')
    .description('convert files with convd: on a server you point it at, or in-process on this machine')
    .version(readVersion(), '-V, --version', 'print the version')
    .helpOption('-h, --help', 'show help')
    .option('--base-url <url>', 'convd base URL ending in /v1 (env CONV_BASE_URL)')
    .option('--api-key <key>', 'API key (env CONV_API_KEY)')
    .option('--profile <name>', 'settings profile to use (env CONV_PROFILE; see `conv config`)')
    .option('--json', 'print the API objects unchanged, one JSON document per command')
    .option('-q, --quiet', 'print only what a script needs (ids), and errors')
    .showSuggestionAfterError(true)
    .configureHelp({ showGlobalOptions: true, sortSubcommands: false })
    .exitOverride()
    .configureOutput({
      writeOut: (text) => void stdout.write(text),
      writeErr: (text) => void stderr.write(text),
      // Commander's "error: unknown option '--x'" -> "error: usage: unknown option '--x'".
      outputError: (text, write) => write(text.replace(/^error: /, 'error: usage: ')),
    })
    .addHelpText('after', `
Settings: a flag beats the environment (CONV_BASE_URL, CONV_API_KEY, CONV_PROFILE), which beats
the profile (\`conv config\`). With no base URL anywhere, convert, watch and formats run in-process.
Exit codes: 0 ok, 1 error, 2 usage, 3 auth, 4 not found, 5 conversion failed or cancelled,
6 --wait ran out, 7 limits, 8 credits. See man conv for more.
${examples([
  ['conv convert photo.png --to webp -o photo.webp', 'convert a file (in-process when no server is configured)'],
  ['conv config set base-url http://127.0.0.1:7700/v1', 'point conv at a convd'],
  ['conv list --status processing', 'what is running'],
  ['conv formats png', 'targets and options of png'],
  ['conv watch inbox --to webp --out outbox', 'convert files as they appear'],
  ['conv dashboard', 'live view of a convd'],
])}`);

  registerConvert(program, ctx);
  registerMerge(program, ctx);
  registerSplit(program, ctx);
  registerGet(program, ctx);
  registerList(program, ctx);
  registerCancel(program, ctx);
  registerDelete(program, ctx);
  registerDownload(program, ctx);
  registerFormats(program, ctx);
  registerAccount(program, ctx);
  registerWebhook(program, ctx);
  registerWatch(program, ctx);
  registerDashboard(program, ctx);
  registerConfig(program, ctx);
  registerCompletion(program, ctx);
  return program;
}
