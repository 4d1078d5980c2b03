import { Command, Option } from 'commander';
import { defaultDataDir, envFlag, type DaemonConfig } from './config.ts';
import { AdminError } from './admin/operations.ts';

const VERSION = '0.1.0';

function dataDirOf(options: { dataDir?: string }): string {
  return options.dataDir ?? defaultDataDir();
}

function print(result: unknown, asJson: boolean, human: (value: never) => string): void {
  process.stdout.write(asJson ? `${JSON.stringify(result, null, 2)}\n` : `${human(result as never)}\n`);
}

async function admin(op: string, args: Record<string, unknown>, options: { dataDir?: string; json?: boolean }, human: (value: never) => string) {
  const { runAdminOperation } = await import('./admin/run.ts');
  try {
    print(await runAdminOperation(dataDirOf(options), op, args), options.json === true, human);
  } catch (error) {
    process.stderr.write(`convd: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = error instanceof AdminError ? error.exitCode : 1;
  }
}

interface AccountOut { id: string; name: string; plan: string; credits: { remaining: number | null; resets_at: string | null } }
interface KeyOut { id: string; account: string; prefix?: string; key?: string; scopes: string[]; revoked_at?: string | null }

interface DeliveryOut {
  id: string; conversion_id: string; event: string; url: string; status: string; next_attempt_at: string | null;
  attempts: { at: string; status_code: number | null; error: string | null }[];
}

const deliveryLine = (d: DeliveryOut) => {
  const attempts = d.attempts.map((a) => a.status_code ?? a.error ?? '?').join(', ');
  const next = d.next_attempt_at ? `  next ${d.next_attempt_at}` : '';
  return `${d.id}  ${d.conversion_id}  ${d.event}  ${d.status}  attempts [${attempts}]${next}  ${d.url}`;
};

const accountLine = (a: AccountOut) =>
  `${a.id}  plan=${a.plan}  credits=${a.credits.remaining ?? 'unmetered'}${a.name ? `  name=${a.name}` : ''}`;
const keyLine = (k: KeyOut) => `${k.id}  ${k.prefix ?? ''}…  scopes=${k.scopes.join(',')}${k.revoked_at ? '  revoked' : ''}`;

export function buildProgram(): Command {
  const program = new Command('convd')
    .description('Self-hosted file conversion service: serves the /v1 HTTP interface and administers its accounts.')
    .version(VERSION)
    .showHelpAfterError()
    .addHelpText('after', `
Examples:
  convd                                   start on 127.0.0.1:7700 with data in ~/.local/share/convd
  convd serve --port 8080 --data-dir /var/lib/convd
  convd accounts create --plan free --name alice --json
  convd keys create --account acc_123 --scopes read,convert
  convd maintenance on --retry-after 600`);

  const dataDirOption = () => new Option('--data-dir <dir>', 'data directory (env CONVD_DATA_DIR)');

  program
    .command('serve', { isDefault: true })
    .description('run the daemon (the default command)')
    .addOption(new Option('--host <host>', 'address to bind').env('CONVD_HOST').default('127.0.0.1'))
    .addOption(new Option('--port <port>', 'port to listen on (0 picks a free one)').env('CONVD_PORT').default('7700'))
    .addOption(dataDirOption().env('CONVD_DATA_DIR'))
    .addOption(new Option('--workers <n>', 'conversions run at once (default: available cores)').env('CONVD_WORKERS'))
    .addOption(new Option('--public-url <url>', 'public address used in links and Location (default: the bound address)').env('CONVD_PUBLIC_URL'))
    .option('--allow-private-urls', 'let URL inputs reach private and loopback addresses (trusted internal use only)')
    .option('--allow-insecure-callbacks', 'allow http and private callback URLs (local webhook testing only)')
    .addHelpText('after', `
Environment: every flag also reads CONVD_<FLAG>, e.g. CONVD_PORT=8080, CONVD_ALLOW_PRIVATE_URLS=1.
On first start with an empty store an unmetered account and one API key are created and the key
is printed once on stderr.`)
    .action(async (options: { host: string; port: string; dataDir?: string; workers?: string; publicUrl?: string; allowPrivateUrls?: boolean; allowInsecureCallbacks?: boolean }) => {
      const port = Number(options.port);
      const workers = options.workers === undefined ? undefined : Number(options.workers);
      if (!Number.isInteger(port) || port < 0 || port > 65535) return usage(`--port must be 0..65535, not ${options.port}`);
      if (workers !== undefined && (!Number.isInteger(workers) || workers < 1)) return usage(`--workers must be a whole number >= 1, not ${options.workers}`);
      const config: DaemonConfig = {
        host: options.host,
        port,
        dataDir: dataDirOf(options),
        workers,
        publicUrl: options.publicUrl,
        allowPrivateUrls: options.allowPrivateUrls ?? envFlag(process.env, 'CONVD_ALLOW_PRIVATE_URLS') ?? false,
        allowInsecureCallbacks: options.allowInsecureCallbacks ?? envFlag(process.env, 'CONVD_ALLOW_INSECURE_CALLBACKS') ?? false,
      };
      const { serve } = await import('./serve.ts');
      await serve(config);
    });

  program.command('doctor').description('check the engines: binary, version, status and pairs offered')
    .option('--json', 'print JSON')
    .addHelpText('after', '\nExit status 1 when an engine is unavailable (its conversions are then not offered).')
    .action(async (o: { json?: boolean }) => {
      const { doctor, formatDoctor } = await import('./doctor.ts');
      const report = await doctor();
      process.stdout.write(o.json ? `${JSON.stringify(report, null, 2)}\n` : `${formatDoctor(report)}\n`);
      if (report.engines.some((engine) => !engine.available)) process.exitCode = 1;
    });

  const accounts = program.command('accounts').description('manage accounts');
  accounts.command('create').description('create an account')
    .addOption(new Option('--plan <plan>', 'plan').choices(['free', 'lite', 'standard', 'pro', 'unmetered']).default('free'))
    .option('--name <name>', 'a name to recognise it by')
    .addOption(dataDirOption()).option('--json', 'print JSON')
    .action((o: { plan: string; name?: string; dataDir?: string; json?: boolean }) => admin('accounts.create', { plan: o.plan, name: o.name }, o, accountLine));
  accounts.command('update <acc_id>').description("change an account's plan or remaining credits")
    .addOption(new Option('--plan <plan>', 'new plan').choices(['free', 'lite', 'standard', 'pro', 'unmetered']))
    .option('--credits <n>', 'set the remaining credits')
    .addOption(dataDirOption()).option('--json', 'print JSON')
    .action((id: string, o: { plan?: string; credits?: string; dataDir?: string; json?: boolean }) => admin('accounts.update', { id, plan: o.plan, credits: o.credits }, o, accountLine));
  accounts.command('list').description('list accounts').addOption(dataDirOption()).option('--json', 'print JSON')
    .action((o: { dataDir?: string; json?: boolean }) => admin('accounts.list', {}, o, (list: AccountOut[]) => list.map(accountLine).join('\n') || '(no accounts)'));

  const keys = program.command('keys').description('manage API keys');
  keys.command('create').description('create an API key (printed once)')
    .requiredOption('--account <acc_id>', 'owning account')
    .option('--scopes <list>', 'comma-separated: read,convert,delete', 'read,convert,delete')
    .addOption(dataDirOption()).option('--json', 'print JSON')
    .action((o: { account: string; scopes: string; dataDir?: string; json?: boolean }) =>
      admin('keys.create', { account: o.account, scopes: o.scopes }, o, (k: KeyOut) => `${k.key}\n(${k.id}, scopes ${k.scopes.join(',')}; this key is shown once)`));
  keys.command('list').description("list an account's keys (never the keys themselves)")
    .requiredOption('--account <acc_id>', 'owning account').addOption(dataDirOption()).option('--json', 'print JSON')
    .action((o: { account: string; dataDir?: string; json?: boolean }) => admin('keys.list', { account: o.account }, o, (list: KeyOut[]) => list.map(keyLine).join('\n') || '(no keys)'));
  keys.command('revoke <key_id>').description('revoke a key at once').addOption(dataDirOption()).option('--json', 'print JSON')
    .action((id: string, o: { dataDir?: string; json?: boolean }) => admin('keys.revoke', { id }, o, (k: KeyOut) => `revoked ${k.id}`));

  program.command('webhook-secret').description("show (or rotate) an account's webhook signing secret")
    .requiredOption('--account <acc_id>', 'account').option('--rotate', 'replace the secret; later deliveries are signed with the new one')
    .addOption(dataDirOption()).option('--json', 'print JSON')
    .action((o: { account: string; rotate?: boolean; dataDir?: string; json?: boolean }) =>
      admin('webhook-secret', { account: o.account, rotate: o.rotate === true }, o, (s: { secret: string }) => s.secret));

  const deliveries = program.command('deliveries').description('webhook deliveries: attempts, status codes, next attempt');
  deliveries.command('list').description('list deliveries, newest first')
    .option('--conversion <cnv_id>', 'only the deliveries of this conversion')
    .addOption(dataDirOption()).option('--json', 'print JSON')
    .action((o: { conversion?: string; dataDir?: string; json?: boolean }) =>
      admin('deliveries.list', { conversion: o.conversion }, o, (list: DeliveryOut[]) => list.map(deliveryLine).join('\n') || '(no deliveries)'));
  deliveries.command('redeliver <delivery_id>').description('send a delivery again now (needs the running daemon)')
    .addOption(dataDirOption()).option('--json', 'print JSON')
    .action((id: string, o: { dataDir?: string; json?: boolean }) => admin('deliveries.redeliver', { id }, o, deliveryLine));

  program.command('maintenance <state>').description('switch the API off (on) or back on (off); /v1 answers 503 api_disabled while on')
    .option('--retry-after <seconds>', 'Retry-After sent while on').addOption(dataDirOption()).option('--json', 'print JSON')
    .action((state: string, o: { retryAfter?: string; dataDir?: string; json?: boolean }) => {
      if (state !== 'on' && state !== 'off') return usage('maintenance takes on or off');
      return admin('maintenance', { enabled: state === 'on', retry_after: o.retryAfter }, o, (r: { maintenance: { enabled: boolean } }) => `maintenance ${r.maintenance.enabled ? 'on' : 'off'}`);
    });
  return program;
}

function usage(message: string): void {
  process.stderr.write(`convd: ${message}\n`);
  process.exitCode = 2;
}

await buildProgram().parseAsync(process.argv);
