import type { PlanId } from './plan.ts';

export const SCOPES = ['read', 'convert', 'delete'] as const;
export type Scope = (typeof SCOPES)[number];

export interface AccountRecord {
  id: string;
  name: string;
  plan: PlanId;
  created_at: string;
  /**
   * The balance is a ledger: `credits_base` was the balance at `credits_base_at`, and every
   * conversion charged after that instant subtracts its credits. Charges live only on the
   * conversion records, so a crash can never leave a charge recorded twice or half-recorded.
   */
  credits_base: number;
  credits_base_at: string;
  /** Start of the next monthly period, when the balance resets to the plan's allowance. */
  resets_at: string;
  webhook_secret: string;
  /**
   * The web face's password (scrypt, src/sign-in/password.ts: `scrypt$N$r$p$salt$hash`, base64); absent
   * until a member set one through a sign-in link.
   */
  password_hash?: string;
  /** `admin`: the box's owner, who sees the owner page of the web face (accounts, maintenance, engines). */
  role?: 'admin';
}

export interface ApiKeyRecord {
  id: string;
  account_id: string;
  /** SHA-256 of the key (hex). Keys are 190+ bits of randomness, so a fast hash is safe here. */
  hash: string;
  /** First characters of the key, to tell keys apart in listings without storing the key. */
  prefix: string;
  scopes: Scope[];
  created_at: string;
  revoked_at: string | null;
  /** What its owner calls it (`ci`, `laptop`); absent on keys made before names. */
  name?: string;
  /** When it last authenticated a request, to within an hour (AccountService.authenticate). */
  last_used_at?: string;
}

export interface Settings {
  maintenance: { enabled: boolean; retry_after: number };
}
