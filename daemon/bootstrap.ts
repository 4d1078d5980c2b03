import type { AccountService } from '../src/service/accounts.ts';
import type { Store } from '../src/store/types.ts';
import { SCOPES } from '../src/model/account.ts';

/**
 * First start with an empty store: an `unmetered` account and one key with every scope, printed
 * once, so `npm start` followed by `conv config set api-key` is a complete setup.
 */
export async function bootstrapFirstAccount(store: Store, accounts: AccountService, write: (line: string) => void): Promise<{ accountId: string; key: string } | null> {
  if ((await store.listAccounts()).length > 0) return null;
  const account = await accounts.createAccount({ plan: 'unmetered', name: 'owner' });
  const { key } = await accounts.createKey(account.id, [...SCOPES]);
  write(`convd: created account ${account.id} (plan unmetered) and its API key (shown once, store it now):\n`);
  write(`convd: api key ${key}\n`);
  return { accountId: account.id, key };
}
