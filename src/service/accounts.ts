import { createHash, timingSafeEqual } from 'node:crypto';
import { ApiError } from '../errors/api-error.ts';
import type { AccountRecord, ApiKeyRecord, Scope } from '../model/account.ts';
import type { Plan, PlanId } from '../model/plan.ts';
import type { AccountView } from '../model/account-view.ts';
import type { DayUsage, Store, StorePeek } from '../store/types.ts';
import { applyMonthlyReset, balanceOf, nextMonthStart, remainingOf, type Balance } from './credits.ts';
import { dailyUsage } from './daily-usage.ts';
import type { ServiceConfig } from './config.ts';
import { engineTimeUse } from './submission-limits.ts';
import { planTimeLimitMs } from './time-limit.ts';
import { newAccountId, newApiKey, newKeyId } from '../model/ids.ts';
import { generateWebhookSecret } from '../webhooks/signature.ts';

export interface Caller {
  account: AccountRecord;
  key: ApiKeyRecord;
}

/** A caller read from the store's memory (authenticateNow): the store's own records, never to be changed. */
export interface PeekedCaller {
  readonly account: Readonly<AccountRecord>;
  readonly key: Readonly<ApiKeyRecord>;
}

export function hashApiKey(key: string): string {
  return keyHashOf(key).hex;
}

/** Keys whose hash is kept in memory; past this the memo starts over (a flood of made-up keys cannot grow it). */
const HASH_MEMO_SIZE = 1024;
/**
 * A key's `last_used_at` is written at most this often: a poller's hundreds of requests a second
 * must not each rewrite the store (on lowdb the main file).
 */
const LAST_USED_RESOLUTION_MS = 3600_000;

/**
 * Whether the key's record admits the bearer whose hash it was found by: not revoked, and the
 * hashes equal. The lookup already matched them; the constant-time compare keeps the final
 * decision free of any early-exit timing, whatever the store does.
 */
function admits(key: Readonly<ApiKeyRecord> | undefined, hash: KeyHash): key is Readonly<ApiKeyRecord> {
  return key !== undefined && !key.revoked_at && timingSafeEqual(storedHashBytes(key), hash.bytes);
}

/** A bearer key's SHA-256, as the store names it (hex) and as compared (bytes). */
interface KeyHash {
  hex: string;
  bytes: Buffer;
}

function keyHashOf(key: string): KeyHash {
  const bytes = createHash('sha256').update(key).digest();
  return { hex: bytes.toString('hex'), bytes };
}

/**
 * Each key record's hash as bytes, decoded once per record object: a poller's key is one object
 * for as long as it is unchanged in lowdb's memory and in PostgreSQL's second cache (its async
 * reads hand out copies, each decoded anew).
 */
const hashBytesByRecord = new WeakMap<Readonly<ApiKeyRecord>, Buffer>();

function storedHashBytes(key: Readonly<ApiKeyRecord>): Buffer {
  let bytes = hashBytesByRecord.get(key);
  if (bytes === undefined) {
    bytes = Buffer.from(key.hash, 'hex');
    hashBytesByRecord.set(key, bytes);
  }
  return bytes;
}

/** Accounts, keys and the account object; also the admin operations behind `convd accounts|keys`. */
export class AccountService {
  /**
   * Hashes of keys that authenticated recently: a poller sends the same key hundreds of times a
   * second and SHA-256 was a tenth of the cost of answering it. Only the hashing is memoized;
   * the key record is looked up every time, so a revoked key is refused at once.
   */
  private readonly hashMemo = new Map<string, KeyHash>();
  /** When this process last wrote each key's `last_used_at` (ms). */
  private readonly usesNoted = new Map<string, number>();

  /** The store's memory, read at once (StorePeek); taken once: a store's peek never changes. */
  private readonly peek: StorePeek | undefined;

  constructor(
    private readonly store: Store,
    private readonly config: ServiceConfig,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.peek = store.peek;
  }

  /** Resolves a bearer key to its account; any failure is the same 401, whatever was wrong. */
  async authenticate(bearer: string | undefined): Promise<Caller> {
    if (!bearer || !bearer.startsWith('cvk_') || bearer.length > 200) throw new ApiError('unauthenticated');
    const hash = this.hashMemo.get(bearer) ?? keyHashOf(bearer);
    const key = await this.store.findApiKeyByHash(hash.hex);
    if (!admits(key, hash)) throw new ApiError('unauthenticated');
    const account = await this.currentAccount(key.account_id);
    if (!account) throw new ApiError('unauthenticated');
    this.noteUse(key);
    if (!this.hashMemo.has(bearer)) {
      if (this.hashMemo.size >= HASH_MEMO_SIZE) this.hashMemo.clear();
      this.hashMemo.set(bearer, hash);
    }
    return { account, key };
  }

  /**
   * `authenticate`'s caller from what the store holds in memory now (StorePeek), for a key that
   * authenticated a moment ago (its hash memoized): no promise, no hashing, nothing copied (the
   * records are the store's, never to be changed). Undefined whenever that cannot be said at once:
   * a key not seen lately, one revoked since, a record not in memory, a monthly reset due (which
   * `authenticate` writes). `authenticate` then decides, every refusal included: this one never
   * refuses, so an answer it gives is one `authenticate` would have given.
   */
  authenticateNow(bearer: string | undefined): PeekedCaller | undefined {
    const peek = this.peek;
    const hash = bearer === undefined ? undefined : this.hashMemo.get(bearer);
    if (peek === undefined || hash === undefined) return undefined;
    const key = peek.apiKeyByHash(hash.hex);
    if (!admits(key, hash)) return undefined;
    const account = peek.account(key.account_id);
    if (!account || this.rolledOver(account)) return undefined;
    this.noteUse(key);
    return { account, key };
  }

  /**
   * Records the key's use when its `last_used_at` is older than the resolution (this process
   * remembers when it last wrote each key's); never delays the request. Under the key's lock, as
   * a revocation is: a use noted at the same moment must not write the key back unrevoked.
   */
  private noteUse(key: ApiKeyRecord): void {
    const now = this.now().getTime();
    const noted = this.usesNoted.get(key.id) ?? (key.last_used_at ? Date.parse(key.last_used_at) : 0);
    if (now - noted < LAST_USED_RESOLUTION_MS) return;
    if (this.usesNoted.size >= HASH_MEMO_SIZE) this.usesNoted.clear();
    this.usesNoted.set(key.id, now);
    void this.store.exclusive(`key:${key.id}`, async (tx) => {
      const current = await tx.getApiKey(key.id);
      if (current && !current.revoked_at) await tx.putApiKey({ ...current, last_used_at: new Date(now).toISOString() });
    }).catch(() => undefined);
  }

  /**
   * Whether `bearer` authenticated a moment ago (it is in the memo above): a map lookup, no hash,
   * no store. Says nothing of whether it still would: `authenticate` decides that.
   */
  authenticatedRecently(bearer: string | undefined): boolean {
    return bearer !== undefined && this.hashMemo.has(bearer);
  }

  requireScope(caller: Caller | PeekedCaller, scope: Scope): void {
    if (!caller.key.scopes.includes(scope)) throw new ApiError('forbidden', { params: { action: scope } });
  }

  /** The account with its monthly reset applied (persisted the first time it is seen due). */
  async currentAccount(id: string): Promise<AccountRecord | undefined> {
    const account = await this.store.getAccount(id);
    return account ? this.current(account) : undefined;
  }

  /** `currentAccount` of a record just read (a list of them): written only if it rolled over. */
  async current(account: AccountRecord): Promise<AccountRecord> {
    const rolled = this.rolledOver(account);
    if (!rolled) return account;
    await this.store.putAccount(rolled);
    return rolled;
  }

  /** The account after the monthly reset that is due; null when none is (an unmetered plan has none). */
  private rolledOver(account: AccountRecord): AccountRecord | null {
    const plan = this.config.plans[account.plan];
    return plan.credits_type === 'unmetered' ? null : applyMonthlyReset(account, plan, this.now());
  }

  /** Every account as stored (a monthly reset that is due not applied: `current` does that). */
  list(): Promise<AccountRecord[]> {
    return this.store.listAccounts();
  }

  /**
   * Every account, oldest first, with its monthly reset applied and the credits it has left (null:
   * unmetered): one read of the accounts and one of their balances, however many accounts there are.
   */
  async listWithCredits(): Promise<{ record: AccountRecord; remaining: number | null }[]> {
    const records = await Promise.all((await this.store.listAccounts()).map((record) => this.current(record)));
    const metered = records.filter((record) => this.config.plans[record.plan].credits_type !== 'unmetered');
    const remaining = await remainingOf(this.store, metered);
    const accounts = records.map((record) => ({ record, remaining: remaining.get(record.id) ?? null }));
    return accounts.sort((a, b) => a.record.created_at.localeCompare(b.record.created_at));
  }

  /** Credits left, held by the account's active conversions, and free for a new submission. */
  balance(account: AccountRecord): Promise<Balance> {
    return balanceOf(this.store, account);
  }

  /** Conversions made and credits charged per day over the last 30 days, oldest first (the account page's chart). */
  usageByDay(accountId: string): Promise<DayUsage[]> {
    return dailyUsage(this.store, accountId, this.now());
  }

  async view(account: AccountRecord): Promise<AccountView> {
    const plan = this.config.plans[account.plan];
    const unmetered = plan.credits_type === 'unmetered';
    const balance = await balanceOf(this.store, account);
    return {
      plan: { id: plan.id, name: plan.name },
      credits: {
        type: plan.credits_type,
        remaining: unmetered ? null : balance.remaining,
        monthly_allowance: plan.monthly_allowance,
        resets_at: unmetered ? null : account.resets_at,
      },
      limits: {
        max_upload_mb: plan.max_upload_mb,
        conversions_per_window: plan.conversions_per_window,
        window_seconds: plan.window_seconds,
        concurrent_conversions: plan.concurrent_conversions,
        active_conversions: await this.store.countActive(account.id),
        requests_per_minute: plan.requests_per_minute,
        result_ttl_hours: plan.result_ttl_hours,
        time_limits: this.timeLimits(plan),
      },
      engine_time: await engineTimeUse(this.store, account.id, plan, this.now().getTime()),
    };
  }

  /** The plan's time limits as they apply: never above the daemon's engine_timeout_ms. */
  private timeLimits(plan: Plan): Record<string, number> {
    const limits: Record<string, number> = {};
    for (const engine of Object.keys(plan.time_limits)) limits[engine] = Math.floor(planTimeLimitMs(this.config, plan, engine) / 1000);
    return limits;
  }

  async createAccount(input: { plan: PlanId; name?: string; admin?: boolean }): Promise<AccountRecord> {
    const now = this.now();
    const plan = this.config.plans[input.plan];
    const account: AccountRecord = {
      id: newAccountId(),
      name: input.name ?? '',
      plan: input.plan,
      created_at: now.toISOString(),
      credits_base: plan.monthly_allowance,
      credits_base_at: now.toISOString(),
      resets_at: nextMonthStart(now).toISOString(),
      webhook_secret: generateWebhookSecret(),
      ...(input.admin === true ? { role: 'admin' as const } : {}),
    };
    await this.store.putAccount(account);
    await this.store.flush();
    return account;
  }

  /** A plan change starts the new plan's allowance unless a balance is given too. */
  async updateAccount(id: string, change: { plan?: PlanId; credits?: number; name?: string; admin?: boolean }): Promise<AccountRecord> {
    const now = this.now().toISOString();
    const updated = await this.changeAccount(id, (account) => {
      const next: AccountRecord = { ...account };
      if (change.name !== undefined) next.name = change.name;
      if (change.admin === true) next.role = 'admin';
      if (change.admin === false) delete next.role;
      if (change.plan !== undefined && change.plan !== account.plan) {
        next.plan = change.plan;
        next.credits_base = this.config.plans[change.plan].monthly_allowance;
        next.credits_base_at = now;
      }
      if (change.credits !== undefined) {
        next.credits_base = change.credits;
        next.credits_base_at = now;
      }
      return next;
    });
    if (!updated) throw new ApiError('not_found', { params: { resource: 'account' } });
    return updated;
  }

  /**
   * Reads the account (its monthly reset applied), changes and writes it as one step under the
   * account's lock (the submissions' lock): two changes at once, from any node (a plan, a
   * password, a rotated secret), never write over each other. Undefined: no such account.
   */
  async changeAccount(id: string, change: (account: AccountRecord) => AccountRecord): Promise<AccountRecord | undefined> {
    const updated = await this.store.exclusive(`account:${id}`, async (tx) => {
      const stored = await tx.getAccount(id);
      if (!stored) return undefined;
      const plan = this.config.plans[stored.plan];
      const current = (plan.credits_type === 'unmetered' ? null : applyMonthlyReset(stored, plan, this.now())) ?? stored;
      const next = change(current);
      await tx.putAccount(next);
      return next;
    });
    await this.store.flush();
    return updated;
  }

  async createKey(accountId: string, scopes: Scope[], name?: string): Promise<{ record: ApiKeyRecord; key: string }> {
    if (!(await this.store.getAccount(accountId))) throw new ApiError('not_found', { params: { resource: 'account' } });
    const key = newApiKey();
    const record: ApiKeyRecord = {
      id: newKeyId(),
      account_id: accountId,
      hash: hashApiKey(key),
      prefix: key.slice(0, 10),
      scopes,
      created_at: this.now().toISOString(),
      revoked_at: null,
      ...(name ? { name: name.slice(0, 100) } : {}),
    };
    await this.store.putApiKey(record);
    await this.store.flush();
    return { record, key };
  }

  /** The account's keys (their records: a key itself is never kept). */
  keysOf(accountId: string): Promise<ApiKeyRecord[]> {
    return this.store.listApiKeys(accountId);
  }

  async revokeKey(id: string): Promise<ApiKeyRecord> {
    const revoked = await this.revoke(id, null);
    if (!revoked) throw new ApiError('not_found', { params: { resource: 'key' } });
    return revoked;
  }

  /** Revokes one of the account's own keys: another account's key is as absent as one that never was (undefined). */
  revokeKeyOf(accountId: string, id: string): Promise<ApiKeyRecord | undefined> {
    return this.revoke(id, accountId);
  }

  private async revoke(id: string, ownerId: string | null): Promise<ApiKeyRecord | undefined> {
    // Under the key's lock: a use being noted at the same moment (noteUse) cannot undo it.
    const revoked = await this.store.exclusive(`key:${id}`, async (tx) => {
      const record = await tx.getApiKey(id);
      if (!record || (ownerId !== null && record.account_id !== ownerId)) return undefined;
      const updated = { ...record, revoked_at: record.revoked_at ?? this.now().toISOString() };
      await tx.putApiKey(updated);
      return updated;
    });
    if (revoked) await this.store.flush();
    return revoked;
  }

  async webhookSecret(accountId: string, rotate: boolean): Promise<string> {
    const account = rotate
      ? await this.changeAccount(accountId, (current) => ({ ...current, webhook_secret: generateWebhookSecret() }))
      : await this.store.getAccount(accountId);
    if (!account) throw new ApiError('not_found', { params: { resource: 'account' } });
    return account.webhook_secret;
  }
}
