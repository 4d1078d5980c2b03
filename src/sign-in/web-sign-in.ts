import { createHash, randomBytes } from 'node:crypto';
import type { AccountRecord } from '../model/account.ts';
import type { AccountService } from '../service/accounts.ts';
import { sameSecret } from '../service/same-secret.ts';
import type { Store, WebTokenRecord } from '../store/types.ts';
import { hashPassword, PASSWORD_LENGTH, verifyAgainstDecoy, verifyPassword } from './password.ts';

/** How long a sign-in link made by the owner stays usable, unless the command says otherwise. */
export const LINK_LIFETIME_MS = 24 * 3600 * 1000;
/** How long a web session lasts from its sign-in (not extended by use: a stolen cookie ages out). */
export const SESSION_LIFETIME_MS = 7 * 24 * 3600 * 1000;

export interface WebSession {
  account: AccountRecord;
  /** The session's token for its forms and calls. */
  csrf: string;
  /** SHA-256 of the cookie's token: what signing out removes. */
  hash: string;
}

/** Why setting a password was refused, for the page to say. */
export type PasswordProblem = 'too_short' | 'too_long' | 'mismatch' | 'link_invalid';

const hashToken = (token: string) => createHash('sha256').update(token).digest('hex');

/**
 * Sign-in for the web face without e-mail: the owner makes a
 * one-time link for an account (`convd accounts login-link`), the member opens it and sets a
 * password, and signs in with the account's name (or id) and that password afterwards. Links and
 * sessions are records in the store (any node honours them); only their SHA-256 is kept there.
 * API keys are never sessions and sessions never API keys: the two never meet in this class.
 */
export class WebSignIn {
  constructor(
    private readonly store: Store,
    private readonly accounts: AccountService,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** A new one-time link for the account; the account's earlier unused links stop working. */
  async createLoginLink(accountId: string, lifetimeMs = LINK_LIFETIME_MS): Promise<{ token: string; expiresAt: string } | null> {
    if (!(await this.store.getAccount(accountId))) return null;
    await this.store.deleteWebTokens(accountId, 'login_link');
    const token = `cwl_${randomBytes(32).toString('base64url')}`;
    const expiresAt = new Date(this.now().getTime() + lifetimeMs).toISOString();
    await this.store.putWebToken({ hash: hashToken(token), kind: 'login_link', account_id: accountId, created_at: this.now().toISOString(), expires_at: expiresAt });
    await this.store.flush();
    return { token, expiresAt };
  }

  /** The account a link is for, while it is unused and unexpired (the page that asks for the password). */
  async linkAccount(token: string): Promise<AccountRecord | null> {
    const record = await this.liveToken(token, 'login_link');
    return record ? (await this.accounts.currentAccount(record.account_id)) ?? null : null;
  }

  /**
   * Uses the link: sets the account's password and opens a session (every other session of the
   * account ends: a new password is often a reaction to a lost one). The link is taken from the
   * store first, so two tabs (or nodes) racing with it get one password set, not two.
   */
  async setPassword(token: string, password: string, repeated: string): Promise<{ session: string; csrf: string } | PasswordProblem> {
    const problem = passwordProblem(password, repeated);
    if (problem) return (await this.liveToken(token, 'login_link')) ? problem : 'link_invalid';
    if (!token.startsWith('cwl_')) return 'link_invalid';
    const link = await this.store.takeWebToken(hashToken(token));
    if (!link || link.kind !== 'login_link' || this.expired(link)) return 'link_invalid';
    // Hashed before the account's lock is taken (it takes 60-100 ms of a thread).
    const passwordHash = await hashPassword(password);
    const account = await this.accounts.changeAccount(link.account_id, (current) => ({ ...current, password_hash: passwordHash }));
    if (!account) return 'link_invalid';
    await this.store.deleteWebTokens(account.id, 'session');
    return this.openSession(account.id);
  }

  /**
   * Signs in with the account's name (or id) and password; null for any failure, which takes as
   * long whatever failed (no account, no password set, a wrong one). A name that two accounts share
   * signs in neither: their members use the account id.
   */
  async signIn(name: string, password: string): Promise<{ session: string; csrf: string } | null> {
    const account = await this.findAccount(name.trim());
    if (!account?.password_hash || password.length > PASSWORD_LENGTH.max) return verifyAgainstDecoy(password.slice(0, PASSWORD_LENGTH.max)).then(() => null);
    if (!(await verifyPassword(password, account.password_hash))) return null;
    return this.openSession(account.id);
  }

  /** The session a cookie's token stands for, or null (unknown, expired, its account gone). */
  async session(token: string | undefined): Promise<WebSession | null> {
    if (!token) return null;
    const record = await this.liveToken(token, 'session');
    if (!record?.csrf) return null;
    const account = await this.accounts.currentAccount(record.account_id);
    return account ? { account, csrf: record.csrf, hash: record.hash } : null;
  }

  /** Whether a form's token is its session's (constant time). */
  static csrfMatches(session: WebSession, sent: unknown): boolean {
    return typeof sent === 'string' && sameSecret(sent, session.csrf);
  }

  /** Ends the session on the server: its cookie is worth nothing from now on, wherever it is. */
  async signOut(session: WebSession): Promise<void> {
    await this.store.takeWebToken(session.hash);
    await this.store.flush();
  }

  private async openSession(accountId: string): Promise<{ session: string; csrf: string }> {
    const session = `cws_${randomBytes(32).toString('base64url')}`;
    const csrf = randomBytes(24).toString('base64url');
    const now = this.now();
    await this.store.putWebToken({
      hash: hashToken(session), kind: 'session', account_id: accountId, created_at: now.toISOString(),
      expires_at: new Date(now.getTime() + SESSION_LIFETIME_MS).toISOString(), csrf,
    });
    await this.store.flush();
    return { session, csrf };
  }

  private async liveToken(token: string, kind: WebTokenRecord['kind']): Promise<WebTokenRecord | null> {
    if (!token.startsWith(kind === 'session' ? 'cws_' : 'cwl_') || token.length > 100) return null;
    const record = await this.store.getWebToken(hashToken(token));
    return record && record.kind === kind && !this.expired(record) ? record : null;
  }

  private expired(record: WebTokenRecord): boolean {
    return Date.parse(record.expires_at) <= this.now().getTime();
  }

  private async findAccount(name: string): Promise<AccountRecord | undefined> {
    if (name === '' || name.length > 200) return undefined;
    if (name.startsWith('acc_')) {
      const byId = await this.accounts.currentAccount(name);
      if (byId) return byId;
    }
    // Two are enough to know the name is shared.
    const named = await this.store.accountsNamed(name, 2);
    return named.length === 1 ? this.accounts.currentAccount(named[0]!.id) : undefined;
  }
}

function passwordProblem(password: string, repeated: string): PasswordProblem | null {
  if ([...password].length < PASSWORD_LENGTH.min) return 'too_short';
  if (password.length > PASSWORD_LENGTH.max) return 'too_long';
  return password === repeated ? null : 'mismatch';
}
