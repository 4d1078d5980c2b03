import { ApiError } from '../../src/errors/api-error.ts';
import { SCOPES, type AccountRecord, type ApiKeyRecord, type Scope } from '../../src/model/account.ts';
import { isPlanId } from '../../src/model/plan.ts';
import { LINK_LIFETIME_MS, type WebSignIn } from '../../src/sign-in/web-sign-in.ts';
import type { ServiceConfig } from '../../src/service/config.ts';
import type { StoreServices } from '../../src/service/store-services.ts';
import type { DeliveryRecord } from '../../src/store/types.ts';
import type { WebhookDeliverer } from '../../src/webhooks/deliverer.ts';

export interface AdminContext extends StoreServices {
  signIn: WebSignIn;
  config: ServiceConfig;
  /** Present only inside the running daemon (redelivery needs its delivery worker). */
  webhooks?: WebhookDeliverer;
}

/** The operation only a running daemon can do (its delivery worker sends). */
export const REDELIVER = 'deliveries.redeliver';

export class AdminError extends Error {
  constructor(message: string, readonly exitCode = 1) {
    super(message);
    this.name = 'AdminError';
  }
}

type Args = Record<string, unknown>;

async function accountJson(context: AdminContext, account: AccountRecord) {
  const plan = context.config.plans[account.plan];
  const unmetered = plan.credits_type === 'unmetered';
  return {
    id: account.id,
    name: account.name,
    plan: account.plan,
    role: account.role ?? 'member',
    created_at: account.created_at,
    credits: {
      type: plan.credits_type,
      remaining: unmetered ? null : (await context.accounts.balance(account)).remaining,
      monthly_allowance: plan.monthly_allowance,
      resets_at: unmetered ? null : account.resets_at,
    },
  };
}

function keyJson(key: ApiKeyRecord) {
  return {
    id: key.id, account: key.account_id, prefix: key.prefix, scopes: key.scopes, created_at: key.created_at, revoked_at: key.revoked_at,
    ...(key.name ? { name: key.name } : {}), last_used_at: key.last_used_at ?? null,
  };
}

/** A delivery as the operator sees it: everything but the body (which holds the conversion). */
function deliveryJson(delivery: DeliveryRecord) {
  const { body: _body, ...rest } = delivery;
  return rest;
}

/**
 * A one-time sign-in link for the web face (the account's earlier ones stop working): the URL to
 * hand over, on the address clients reach this daemon at (its public_url, else the bound one).
 */
async function loginLink(context: AdminContext, accountId: string, ttl: unknown): Promise<{ url: string; expires_at: string }> {
  let lifetimeMs = LINK_LIFETIME_MS;
  if (ttl !== undefined) {
    const hours = Number(ttl);
    if (!Number.isFinite(hours) || hours <= 0 || hours > 24 * 30) throw new AdminError('--hours must be a number of hours above 0, at most 720 (30 days)', 2);
    lifetimeMs = hours * 3600 * 1000;
  }
  const made = await context.signIn.createLoginLink(accountId, lifetimeMs);
  if (!made) throw new AdminError(`no account ${accountId}`, 4);
  const origin = context.config.baseUrl.replace(/\/v1\/?$/, '');
  return { url: `${origin}/link/${made.token}`, expires_at: made.expiresAt };
}

function parseScopes(raw: unknown): Scope[] {
  if (raw === undefined) return [...SCOPES];
  const list = String(raw).split(',').map((s) => s.trim()).filter(Boolean);
  const unknown = list.filter((s) => !(SCOPES as readonly string[]).includes(s));
  if (unknown.length > 0 || list.length === 0) throw new AdminError(`scopes must be a comma-separated list of ${SCOPES.join(', ')}`, 2);
  return [...new Set(list)] as Scope[];
}

function requireString(args: Args, name: string): string {
  const value = args[name];
  if (typeof value !== 'string' || value === '') throw new AdminError(`--${name} is required`, 2);
  return value;
}

async function mustAccount(context: AdminContext, id: string): Promise<AccountRecord> {
  const account = await context.accounts.currentAccount(id);
  if (!account) throw new AdminError(`no account ${id}`, 4);
  return account;
}

/** The admin operations behind `convd accounts|keys|webhook-secret|maintenance`, shared by the socket and the direct path. */
export const ADMIN_OPERATIONS: Record<string, (context: AdminContext, args: Args) => Promise<unknown>> = {
  async 'accounts.create'(context, args) {
    const plan = args.plan ?? 'free';
    if (!isPlanId(plan)) throw new AdminError('--plan must be one of free, lite, standard, pro, unmetered', 2);
    const account = await context.accounts.createAccount({ plan, name: typeof args.name === 'string' ? args.name : undefined });
    return { ...(await accountJson(context, account)), ...(args.loginLink === true ? { login_link: await loginLink(context, account.id, args.ttl) } : {}) };
  },
  async 'accounts.login-link'(context, args) {
    const id = requireString(args, 'id');
    // loginLink says "no account" (exit 4) itself.
    return { account: id, ...(await loginLink(context, id, args.ttl)) };
  },
  async 'accounts.update'(context, args) {
    const id = requireString(args, 'id');
    await mustAccount(context, id);
    if (args.plan !== undefined && !isPlanId(args.plan)) throw new AdminError('--plan must be one of free, lite, standard, pro, unmetered', 2);
    let credits: number | undefined;
    if (args.credits !== undefined) {
      credits = Number(args.credits);
      if (!Number.isInteger(credits) || credits < 0) throw new AdminError('--credits must be a whole number >= 0', 2);
    }
    if (args.role !== undefined && args.role !== 'admin' && args.role !== 'member') throw new AdminError('--role must be admin or member', 2);
    try {
      const account = await context.accounts.updateAccount(id, {
        plan: isPlanId(args.plan) ? args.plan : undefined, credits, ...(args.role !== undefined ? { admin: args.role === 'admin' } : {}),
      });
      return accountJson(context, account);
    } catch (error) {
      if (error instanceof ApiError) throw new AdminError(`no account ${id}`, 4);
      throw error;
    }
  },
  async 'accounts.list'(context) {
    return Promise.all((await context.accounts.list()).map((account) => accountJson(context, account)));
  },
  async 'keys.create'(context, args) {
    const accountId = requireString(args, 'account');
    await mustAccount(context, accountId);
    const { record, key } = await context.accounts.createKey(accountId, parseScopes(args.scopes), typeof args.name === 'string' ? args.name : undefined);
    return { id: record.id, key, account: record.account_id, scopes: record.scopes, ...(record.name ? { name: record.name } : {}) };
  },
  async 'keys.list'(context, args) {
    const accountId = requireString(args, 'account');
    await mustAccount(context, accountId);
    return (await context.accounts.keysOf(accountId)).map(keyJson);
  },
  async 'keys.revoke'(context, args) {
    const id = requireString(args, 'id');
    try {
      return keyJson(await context.accounts.revokeKey(id));
    } catch (error) {
      if (error instanceof ApiError) throw new AdminError(`no key ${id}`, 4);
      throw error;
    }
  },
  async 'webhook-secret'(context, args) {
    const accountId = requireString(args, 'account');
    await mustAccount(context, accountId);
    return { account: accountId, secret: await context.accounts.webhookSecret(accountId, args.rotate === true) };
  },
  async 'deliveries.list'(context, args) {
    const conversionId = typeof args.conversion === 'string' ? args.conversion : undefined;
    return (await context.deliveries.list(conversionId)).map(deliveryJson);
  },
  async [REDELIVER](context, args) {
    const id = requireString(args, 'id');
    if (!context.webhooks) throw new AdminError('redelivery needs the running daemon: start convd first', 1);
    const delivery = await context.webhooks.redeliver(id);
    if (!delivery) throw new AdminError(`no delivery ${id}`, 4);
    return deliveryJson(delivery);
  },
  async maintenance(context, args) {
    try {
      return { maintenance: await context.maintenance.set(args.enabled === true, args.retry_after === undefined ? undefined : Number(args.retry_after)) };
    } catch (error) {
      if (error instanceof ApiError) throw new AdminError('--retry-after must be a whole number of seconds >= 1', 2);
      throw error;
    }
  },
};
