import { availableParallelism } from 'node:os';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command, Option } from 'commander';
import { GROUPS, SCALARS, type Setting } from './config-settings.ts';
import { AdminError } from './admin/operations.ts';
import type { BlobStore } from '../src/store/blob-store.ts';

const VERSION = '0.1.0';

// libuv's thread pool (4 threads by default) runs both sharp's image work and the daemon's file
// I/O (the store, spool files, downloads): image conversions at every worker must leave threads
// for the rest. Read by libuv when the pool first starts, after this line; a value set by the
// operator stands.
process.env.UV_THREADPOOL_SIZE ??= String(Math.max(4, 2 * availableParallelism() + 2));

/** Where the store of an admin command is (the daemon's precedence; config-load.ts is loaded only then). */
async function storePlaceOf(options: { dataDir?: string; databaseUrl?: string; config?: string }) {
  return (await import('./admin/store-place.ts')).storePlaceOf(options);
}

const collect = (value: string, previous: string[] | undefined) => [...(previous ?? []), value];

/** The options of `serve` (and `config print`), one per setting of daemon/config-settings.ts. */
function addSettingOptions(command: Command): Command {
  command.addOption(new Option('--config <file>', 'JSON config file (comments allowed) (env CONVD_CONFIG)'));
  for (const setting of Object.values(SCALARS) as Setting[]) {
    if (!setting.flag) continue;
    const fallback = setting.key === 'workers' ? 'available cores' : setting.key === 'data_dir' ? '$XDG_DATA_HOME/convd' : setting.fallback();
    const shown = fallback === undefined || fallback === false
      ? ''
      : `, default ${typeof fallback === 'string' || !setting.kind.format ? String(fallback) : String(setting.kind.format(fallback))}`;
    command.addOption(new Option(setting.flag, `${setting.help} (env ${setting.env}${shown})`));
  }
  for (const group of GROUPS) {
    command.addOption(new Option(group.flag, `${group.help} (env ${group.envPrefix}<...>)`).argParser(collect));
  }
  return command;
}

async function loadOrExit(options: Record<string, unknown>) {
  const { ConfigError, loadConfig } = await import('./config-load.ts');
  const input = { flags: options, env: process.env, cwd: process.cwd() };
  try {
    return { loaded: loadConfig(input), input };
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`convd: invalid configuration: ${error.message}\n`);
    process.exitCode = 2;
    return null;
  }
}

function print(result: unknown, asJson: boolean, human: (value: never) => string): void {
  process.stdout.write(asJson ? `${JSON.stringify(result, null, 2)}\n` : `${human(result as never)}\n`);
}

async function admin(op: string, args: Record<string, unknown>, options: { dataDir?: string; databaseUrl?: string; config?: string; json?: boolean }, human: (value: never) => string) {
  const { runAdmin } = await import('./admin/run.ts');
  try {
    print(await runAdmin(await storePlaceOf(options), op, args), options.json === true, human);
  } catch (error) {
    process.stderr.write(`convd: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = error instanceof AdminError ? error.exitCode : 1;
  }
}

interface LinkOut { url: string; expires_at: string }
const linkLines = (link: LinkOut) => `sign-in link (works once, until ${link.expires_at}):\n  ${link.url}`;
interface AccountOut { id: string; name: string; plan: string; credits: { remaining: number | null; resets_at: string | null } }
interface KeyOut { id: string; account: string; prefix?: string; key?: string; scopes: string[]; revoked_at?: string | null; name?: string; last_used_at?: string | null }

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
const keyLine = (k: KeyOut) => `${k.id}  ${k.prefix ?? ''}…  scopes=${k.scopes.join(',')}${k.name ? `  name=${k.name}` : ''}  last used ${k.last_used_at ?? 'never'}${k.revoked_at ? '  revoked' : ''}`;

export function buildProgram(): Command {
  const program = new Command('convd')
    .description('Self-hosted file conversion service: serves the /v1 HTTP interface and administers its accounts.')
    .version(VERSION)
    .showHelpAfterError()
    .addHelpText('after', `
Examples:
  convd                                   start on 127.0.0.1:7700 with data in ~/.local/share/convd
  convd serve --port 8080 --data-dir /var/lib/convd
  convd --config /etc/convd/convd.json    all settings from a file (flags and CONVD_* still win)
  convd config print --config /etc/convd/convd.json
  convd accounts create --plan free --name alice --json
  convd keys create --account acc_123 --scopes read,convert
  convd maintenance on --retry-after 600`);

  const dataDirOption = () => new Option('--data-dir <dir>', 'data directory (env CONVD_DATA_DIR)');
  const databaseOption = () => new Option('--database-url <url>', 'the PostgreSQL database of the daemons, instead of a data dir (env CONVD_DATABASE_URL)');
  const configOption = () => new Option('--config <file>', 'read data_dir and database_url from this config file (env CONVD_CONFIG)');

  addSettingOptions(program
    .command('serve', { isDefault: true })
    .description('run the daemon (the default command)'))
    .addHelpText('after', `
Precedence: flag > CONVD_* environment variable > config file > default. Every setting of the
config file is listed by \`convd config print\`; plans, credit weights and engine time limits
are nested objects there (plans.free.max_upload_mb), CONVD_PLAN_FREE_MAX_UPLOAD_MB in the
environment. An invalid value stops the start with a message naming it (exit 2).

Endpoints besides /v1: GET /healthz (liveness), GET /readyz (store writable, disk above the
floor, engines present), GET /metrics (Prometheus; on --metrics-listen instead when set; with a
--host beyond loopback only with --metrics-token),
GET /v1/openapi.json (the interface, no key needed).

Signals: SIGTERM/SIGINT stop gracefully (requests in flight and running conversions get
--drain-timeout, what still runs is re-queued; a second signal exits at once); SIGHUP reloads
the config file: plans, credit weights, engine time limits, output caps, retention, log level
and format, disk floor, body time limits, trusted proxy, public URL, metrics token, failed
authentications per minute, TLS certificate. Host, port, data dir, workers, metrics address,
allow-* switches, the sweep interval, the engine memory and the input caps need a restart.

On first start with an empty store an unmetered account and one API key are created. The key
is shown once on stderr when that is a terminal; otherwise it is written to
DATA_DIR/first-api-key (mode 0600) and the log names that file, never the key.`)
    .action(async (options: Record<string, unknown>) => {
      const result = await loadOrExit(options);
      if (!result) return;
      const { serve } = await import('./serve-process.ts');
      await serve(result.loaded, result.input);
    });

  const configCommand = program.command('config').description('show the configuration convd would run with');
  addSettingOptions(configCommand.command('print')
    .description('print the effective configuration (secrets masked) and where each value comes from')
    .option('--json', 'print JSON: {config_file, settings (shaped like a config file), sources}'))
    .addHelpText('after', '\nTakes the same flags as serve; exit 2 when a value is invalid, naming it.')
    .action(async (options: Record<string, unknown>) => {
      const result = await loadOrExit(options);
      if (!result) return;
      const { configAsJson, configAsText } = await import('./config-print.ts');
      process.stdout.write(options.json ? `${JSON.stringify(configAsJson(result.loaded), null, 2)}\n` : `${configAsText(result.loaded)}\n`);
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
    .option('--name <name>', 'a name to recognise it by (its members sign in to the web pages with it)')
    .option('--login-link', 'also make a one-time link to the web pages, where a member sets a password')
    .option('--hours <n>', 'how long the link works (default 24)')
    .addOption(dataDirOption()).addOption(databaseOption()).addOption(configOption()).option('--json', 'print JSON')
    .action((o: { plan: string; name?: string; loginLink?: boolean; hours?: string; dataDir?: string; json?: boolean }) => admin('accounts.create', { plan: o.plan, name: o.name, loginLink: o.loginLink === true, ttl: o.hours }, o,
      (a: AccountOut & { login_link?: LinkOut }) => [accountLine(a), ...(a.login_link ? [linkLines(a.login_link)] : [])].join('\n')));
  accounts.command('login-link <acc_id>').description('make a one-time link to the web pages for an account: its member sets a password there (earlier links stop working)')
    .option('--hours <n>', 'how long the link works (default 24)')
    .addOption(dataDirOption()).addOption(databaseOption()).addOption(configOption()).option('--json', 'print JSON')
    .action((id: string, o: { hours?: string; dataDir?: string; json?: boolean }) => admin('accounts.login-link', { id, ttl: o.hours }, o, linkLines));
  accounts.command('update <acc_id>').description("change an account's plan or remaining credits")
    .addOption(new Option('--plan <plan>', 'new plan').choices(['free', 'lite', 'standard', 'pro', 'unmetered']))
    .option('--credits <n>', 'set the remaining credits')
    .addOption(new Option('--role <role>', 'admin: the owner page of the web pages is theirs too; member: not').choices(['admin', 'member']))
    .addOption(dataDirOption()).addOption(databaseOption()).addOption(configOption()).option('--json', 'print JSON')
    .action((id: string, o: { plan?: string; credits?: string; role?: string; dataDir?: string; json?: boolean }) => admin('accounts.update', { id, plan: o.plan, credits: o.credits, role: o.role }, o, accountLine));
  accounts.command('list').description('list accounts').addOption(dataDirOption()).addOption(databaseOption()).addOption(configOption()).option('--json', 'print JSON')
    .action((o: { dataDir?: string; json?: boolean }) => admin('accounts.list', {}, o, (list: AccountOut[]) => list.map(accountLine).join('\n') || '(no accounts)'));

  const keys = program.command('keys').description('manage API keys');
  keys.command('create').description('create an API key (printed once)')
    .requiredOption('--account <acc_id>', 'owning account')
    .option('--scopes <list>', 'comma-separated: read,convert,delete', 'read,convert,delete')
    .option('--name <name>', 'what the key is for (shown in listings)')
    .addOption(dataDirOption()).addOption(databaseOption()).addOption(configOption()).option('--json', 'print JSON')
    .action((o: { account: string; scopes: string; name?: string; dataDir?: string; json?: boolean }) =>
      admin('keys.create', { account: o.account, scopes: o.scopes, name: o.name }, o, (k: KeyOut) => `${k.key}\n(${k.id}, scopes ${k.scopes.join(',')}; this key is shown once)`));
  keys.command('list').description("list an account's keys (never the keys themselves)")
    .requiredOption('--account <acc_id>', 'owning account').addOption(dataDirOption()).addOption(databaseOption()).addOption(configOption()).option('--json', 'print JSON')
    .action((o: { account: string; dataDir?: string; json?: boolean }) => admin('keys.list', { account: o.account }, o, (list: KeyOut[]) => list.map(keyLine).join('\n') || '(no keys)'));
  keys.command('revoke <key_id>').description('revoke a key at once').addOption(dataDirOption()).addOption(databaseOption()).addOption(configOption()).option('--json', 'print JSON')
    .action((id: string, o: { dataDir?: string; json?: boolean }) => admin('keys.revoke', { id }, o, (k: KeyOut) => `revoked ${k.id}`));

  program.command('webhook-secret').description("show (or rotate) an account's webhook signing secret")
    .requiredOption('--account <acc_id>', 'account').option('--rotate', 'replace the secret; later deliveries are signed with the new one')
    .addOption(dataDirOption()).addOption(databaseOption()).addOption(configOption()).option('--json', 'print JSON')
    .action((o: { account: string; rotate?: boolean; dataDir?: string; json?: boolean }) =>
      admin('webhook-secret', { account: o.account, rotate: o.rotate === true }, o, (s: { secret: string }) => s.secret));

  const deliveries = program.command('deliveries').description('webhook deliveries: attempts, status codes, next attempt');
  deliveries.command('list').description('list deliveries, newest first')
    .option('--conversion <cnv_id>', 'only the deliveries of this conversion')
    .addOption(dataDirOption()).addOption(databaseOption()).addOption(configOption()).option('--json', 'print JSON')
    .action((o: { conversion?: string; dataDir?: string; json?: boolean }) =>
      admin('deliveries.list', { conversion: o.conversion }, o, (list: DeliveryOut[]) => list.map(deliveryLine).join('\n') || '(no deliveries)'));
  deliveries.command('redeliver <delivery_id>').description('send a delivery again now (needs the running daemon)')
    .addOption(dataDirOption()).addOption(databaseOption()).addOption(configOption()).option('--json', 'print JSON')
    .action((id: string, o: { dataDir?: string; json?: boolean }) => admin('deliveries.redeliver', { id }, o, deliveryLine));

  const storeCommand = program.command('store').description('move a box: its lowdb store out to a directory, and into PostgreSQL');
  storeCommand.command('export <dir>').description('write the stopped daemon\'s store (and with --with-files the results and waiting inputs) into a new directory')
    .option('--with-files', 'copy the results of succeeded conversions and the inputs of waiting ones too')
    .addOption(dataDirOption()).addOption(configOption()).option('--json', 'print JSON')
    .action((dir: string, o: { withFiles?: boolean; dataDir?: string; config?: string; json?: boolean }) => transfer(o, async () => {
      const { exportStore } = await import('./admin/store-transfer.ts');
      return exportStore((await storePlaceOf({ dataDir: o.dataDir, config: o.config })).dataDir, dir, o.withFiles === true);
    }));
  storeCommand.command('import <dir>').description('read an export into the PostgreSQL database (no daemon may run on it meanwhile); again changes nothing')
    .addOption(databaseOption()).option('--data-dir <dir>', 'the new node\'s data dir, for the exported files (created if missing)')
    .option('--blob-url <url>', 'the bucket for the exported files instead (s3://bucket/prefix?endpoint=…; env CONVD_BLOB_URL)')
    .addOption(configOption()).option('--json', 'print JSON')
    .action((dir: string, o: { databaseUrl?: string; dataDir?: string; blobUrl?: string; config?: string; json?: boolean }) => transfer(o, async () => {
      // Its --data-dir is the new node's, for the files: the store is the database.
      const place = await storePlaceOf({ databaseUrl: o.databaseUrl, config: o.config });
      const { databaseUrl } = place;
      if (!databaseUrl) throw new AdminError('import into which database? name it with --database-url (or CONVD_DATABASE_URL)', 2);
      const { checkExport, importStore, openImportTarget } = await import('./admin/store-transfer.ts');
      const checked = await checkExport(dir);
      const blobTarget = o.blobUrl ?? process.env.CONVD_BLOB_URL ?? o.dataDir;
      if (checked.withFiles && !blobTarget) throw new AdminError('the export holds files: say where they go with --data-dir DIR or --blob-url URL', 2);
      const { LocalBlobStore } = await import('../src/store/blob-store.ts');
      const blobUrl = o.blobUrl ?? process.env.CONVD_BLOB_URL;
      const target = await openImportTarget({ ...place, databaseUrl });
      // A bucket's uploads go through a scratch directory of their own, removed after.
      const scratch = blobUrl ? await mkdtemp(join(tmpdir(), 'convd-import-')) : null;
      try {
        let blobs: BlobStore | null = null;
        if (blobUrl && scratch) blobs = await (await import('../src/store/s3/s3-blob-store.ts')).S3BlobStore.open(blobUrl, scratch);
        else if (o.dataDir) blobs = await LocalBlobStore.open(join(o.dataDir, 'blobs'));
        return await importStore(dir, target, blobs);
      } finally {
        await target.close();
        if (scratch) await rm(scratch, { recursive: true, force: true });
      }
    }));
  program.command('migrate').description('apply the PostgreSQL schema\'s missing steps (a daemon does so at start too)')
    .addOption(databaseOption()).addOption(configOption()).option('--json', 'print JSON')
    .action((o: { databaseUrl?: string; config?: string; json?: boolean }) => transfer(o, async () => {
      const { databaseUrl } = await storePlaceOf(o);
      if (!databaseUrl) throw new AdminError('migrate which database? name it with --database-url (or CONVD_DATABASE_URL)', 2);
      const { migrateDatabase } = await import('../src/store/postgres/migrate.ts');
      return migrateDatabase(databaseUrl);
    }));

  program.command('maintenance <state>').description('switch the API off (on) or back on (off); /v1 answers 503 api_disabled while on')
    .option('--retry-after <seconds>', 'Retry-After sent while on').addOption(dataDirOption()).addOption(databaseOption()).addOption(configOption()).option('--json', 'print JSON')
    .action((state: string, o: { retryAfter?: string; dataDir?: string; json?: boolean }) => {
      if (state !== 'on' && state !== 'off') return usage('maintenance takes on or off');
      return admin('maintenance', { enabled: state === 'on', retry_after: o.retryAfter }, o, (r: { maintenance: { enabled: boolean } }) => `maintenance ${r.maintenance.enabled ? 'on' : 'off'}`);
    });
  return program;
}

/** A store command: its report as JSON or as one line; failures as admin commands give them. */
async function transfer(options: { json?: boolean }, work: () => Promise<object>): Promise<void> {
  try {
    const report = await work();
    print(report, options.json === true, (value: Record<string, unknown>) => Object.entries(value).map(([key, n]) => `${key} ${Array.isArray(n) ? n.join(',') || 'none' : String(n)}`).join(', '));
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`convd: ${message}\n`);
    process.exitCode = error instanceof AdminError ? error.exitCode : 1;
  }
}

function usage(message: string): void {
  process.stderr.write(`convd: ${message}\n`);
  process.exitCode = 2;
}

await buildProgram().parseAsync(process.argv);
