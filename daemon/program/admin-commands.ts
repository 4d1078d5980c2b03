import { Option, type Command } from 'commander';
import { accountLine, deliveryLine, keyLine, linkLines, type AccountOut, type DeliveryOut, type KeyOut, type LinkOut } from './admin-lines.ts';
import { admin, configOption, databaseOption, dataDirOption, usage, type StoreOptions } from './admin-run.ts';

const PLANS = ['free', 'lite', 'standard', 'pro', 'unmetered'];

/** Where the store is, and --json: the options every admin command ends with. */
function withStoreOptions(command: Command): Command {
  return command.addOption(dataDirOption()).addOption(databaseOption()).addOption(configOption()).option('--json', 'print JSON');
}

export function registerAccounts(program: Command): void {
  const accounts = program.command('accounts').description('manage accounts');
  withStoreOptions(accounts.command('create').description('create an account')
    .addOption(new Option('--plan <plan>', 'plan').choices(PLANS).default('free'))
    .option('--name <name>', 'a name to recognise it by (its members sign in to the web pages with it)')
    .option('--login-link', 'also make a one-time link to the web pages, where a member sets a password')
    .option('--hours <n>', 'how long the link works (default 24)'))
    .action((o: StoreOptions & { plan: string; name?: string; loginLink?: boolean; hours?: string }) => admin('accounts.create', { plan: o.plan, name: o.name, loginLink: o.loginLink === true, ttl: o.hours }, o,
      (a: AccountOut & { login_link?: LinkOut }) => [accountLine(a), ...(a.login_link ? [linkLines(a.login_link)] : [])].join('\n')));
  withStoreOptions(accounts.command('login-link <acc_id>').description('make a one-time link to the web pages for an account: its member sets a password there (earlier links stop working)')
    .option('--hours <n>', 'how long the link works (default 24)'))
    .action((id: string, o: StoreOptions & { hours?: string }) => admin('accounts.login-link', { id, ttl: o.hours }, o, linkLines));
  withStoreOptions(accounts.command('update <acc_id>').description("change an account's plan or remaining credits")
    .addOption(new Option('--plan <plan>', 'new plan').choices(PLANS))
    .option('--credits <n>', 'set the remaining credits')
    .addOption(new Option('--role <role>', 'admin: the owner page of the web pages is theirs too; member: not').choices(['admin', 'member'])))
    .action((id: string, o: StoreOptions & { plan?: string; credits?: string; role?: string }) => admin('accounts.update', { id, plan: o.plan, credits: o.credits, role: o.role }, o, accountLine));
  withStoreOptions(accounts.command('list').description('list accounts'))
    .action((o: StoreOptions) => admin('accounts.list', {}, o, (list: AccountOut[]) => list.map(accountLine).join('\n') || '(no accounts)'));
}

export function registerKeys(program: Command): void {
  const keys = program.command('keys').description('manage API keys');
  withStoreOptions(keys.command('create').description('create an API key (printed once)')
    .requiredOption('--account <acc_id>', 'owning account')
    .option('--scopes <list>', 'comma-separated: read,convert,delete', 'read,convert,delete')
    .option('--name <name>', 'what the key is for (shown in listings)'))
    .action((o: StoreOptions & { account: string; scopes: string; name?: string }) =>
      admin('keys.create', { account: o.account, scopes: o.scopes, name: o.name }, o, (k: KeyOut) => `${k.key}\n(${k.id}, scopes ${k.scopes.join(',')}; this key is shown once)`));
  withStoreOptions(keys.command('list').description("list an account's keys (never the keys themselves)")
    .requiredOption('--account <acc_id>', 'owning account'))
    .action((o: StoreOptions & { account: string }) => admin('keys.list', { account: o.account }, o, (list: KeyOut[]) => list.map(keyLine).join('\n') || '(no keys)'));
  withStoreOptions(keys.command('revoke <key_id>').description('revoke a key at once'))
    .action((id: string, o: StoreOptions) => admin('keys.revoke', { id }, o, (k: KeyOut) => `revoked ${k.id}`));
}

export function registerWebhookSecret(program: Command): void {
  withStoreOptions(program.command('webhook-secret').description("show (or rotate) an account's webhook signing secret")
    .requiredOption('--account <acc_id>', 'account').option('--rotate', 'replace the secret; later deliveries are signed with the new one'))
    .action((o: StoreOptions & { account: string; rotate?: boolean }) =>
      admin('webhook-secret', { account: o.account, rotate: o.rotate === true }, o, (s: { secret: string }) => s.secret));
}

export function registerDeliveries(program: Command): void {
  const deliveries = program.command('deliveries').description('webhook deliveries: attempts, status codes, next attempt');
  withStoreOptions(deliveries.command('list').description('list deliveries, newest first')
    .option('--conversion <cnv_id>', 'only the deliveries of this conversion'))
    .action((o: StoreOptions & { conversion?: string }) =>
      admin('deliveries.list', { conversion: o.conversion }, o, (list: DeliveryOut[]) => list.map(deliveryLine).join('\n') || '(no deliveries)'));
  withStoreOptions(deliveries.command('redeliver <delivery_id>').description('send a delivery again now (needs the running daemon)'))
    .action((id: string, o: StoreOptions) => admin('deliveries.redeliver', { id }, o, deliveryLine));
}

export function registerMaintenance(program: Command): void {
  withStoreOptions(program.command('maintenance <state>').description('switch the API off (on) or back on (off); /v1 answers 503 api_disabled while on')
    .option('--retry-after <seconds>', 'Retry-After sent while on'))
    .action((state: string, o: StoreOptions & { retryAfter?: string }) => {
      if (state !== 'on' && state !== 'off') return usage('maintenance takes on or off');
      return admin('maintenance', { enabled: state === 'on', retry_after: o.retryAfter }, o, (r: { maintenance: { enabled: boolean } }) => `maintenance ${r.maintenance.enabled ? 'on' : 'off'}`);
    });
}
