import { join } from 'node:path';
import type { AccountService } from '../src/service/accounts.ts';
import { SCOPES } from '../src/model/account.ts';
import { preparePrivateFile } from './private-file.ts';

/** In the data dir, for the first key when nobody watches stderr. */
export const FIRST_KEY_FILE = 'first-api-key';

export interface FirstKeyOutput {
  /** One line of stderr. */
  write(line: string): void;
  /** Whether stderr is a terminal, where a person reads the key and no log keeps it. */
  terminal: boolean;
  dataDir: string;
}

export interface FirstAccount {
  accountId: string;
  key: string;
  /** Where the key was written; null when it was shown on the terminal. */
  keyFile: string | null;
}

/**
 * First start with an empty store: an `unmetered` account and one key with every scope, so `npm
 * start` followed by `conv config set api-key` is a complete setup. The key is shown on stderr
 * only when that is a terminal. Otherwise stderr is a log (the journal under systemd, kept and
 * readable by more than the owner), so the key goes to an owner-only file in the data dir and
 * the log names the file.
 */
export async function bootstrapFirstAccount(accounts: AccountService, out: FirstKeyOutput): Promise<FirstAccount | null> {
  if ((await accounts.list()).length > 0) return null;
  const keyFile = out.terminal ? null : join(out.dataDir, FIRST_KEY_FILE);
  // Before the account: a data dir where the file cannot be made stops the start with nothing created.
  const pending = keyFile ? await preparePrivateFile(keyFile) : null;
  let accountId: string;
  let key: string;
  try {
    accountId = (await accounts.createAccount({ plan: 'unmetered', name: 'owner', admin: true })).id;
    key = (await accounts.createKey(accountId, [...SCOPES])).key;
  } catch (error) {
    await pending?.discard();
    throw error;
  }
  if (!pending || !keyFile) {
    out.write(`convd: created account ${accountId} (plan unmetered) and its API key (shown once, store it now):\n`);
    out.write(`convd: api key ${key}\n`);
    return { accountId, key, keyFile: null };
  }
  try {
    await pending.commit(`${key}\n`);
  } catch (error) {
    throw new Error(`created account ${accountId}, but its API key could not be written to ${keyFile} (${error instanceof Error ? error.message : String(error)}): `
      + `make one with \`convd keys create --account ${accountId}\``);
  }
  // Tests and scripts read the file named on the second line.
  out.write(`convd: created account ${accountId} (plan unmetered) and its API key, written to an owner-only file instead of this log (store the key, then delete the file):\n`);
  out.write(`convd: api key file ${keyFile}\n`);
  return { accountId, key, keyFile };
}
