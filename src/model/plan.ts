/** The interface's plans plus the self-host `unmetered` plan, with defaults for the values the interface leaves open. */
export const PLAN_IDS = ['free', 'lite', 'standard', 'pro', 'unmetered'] as const;
export type PlanId = (typeof PLAN_IDS)[number];

export type CreditsType = 'plan_credits' | 'free_api_credits' | 'unmetered';

export interface Plan {
  id: PlanId;
  name: string;
  credits_type: CreditsType;
  monthly_allowance: number;
  max_upload_mb: number;
  conversions_per_window: number;
  window_seconds: number;
  concurrent_conversions: number;
  requests_per_minute: number;
  result_ttl_hours: number;
  /** The largest result a conversion may write, whatever its input (MiB); not part of the account object. */
  max_output_mb: number;
}

const WINDOW_SECONDS = 600;
const RESULT_TTL_HOURS = 24;

export const DEFAULT_PLANS: Readonly<Record<PlanId, Plan>> = {
  free: {
    id: 'free', name: 'Free', credits_type: 'free_api_credits', monthly_allowance: 100, max_upload_mb: 100,
    conversions_per_window: 20, window_seconds: WINDOW_SECONDS, concurrent_conversions: 2, requests_per_minute: 30,
    result_ttl_hours: RESULT_TTL_HOURS, max_output_mb: 1000,
  },
  lite: {
    id: 'lite', name: 'Lite', credits_type: 'plan_credits', monthly_allowance: 1000, max_upload_mb: 1000,
    conversions_per_window: 100, window_seconds: WINDOW_SECONDS, concurrent_conversions: 5, requests_per_minute: 120,
    result_ttl_hours: RESULT_TTL_HOURS, max_output_mb: 10000,
  },
  standard: {
    id: 'standard', name: 'Standard', credits_type: 'plan_credits', monthly_allowance: 2500, max_upload_mb: 2000,
    conversions_per_window: 250, window_seconds: WINDOW_SECONDS, concurrent_conversions: 10, requests_per_minute: 300,
    result_ttl_hours: RESULT_TTL_HOURS, max_output_mb: 20000,
  },
  pro: {
    id: 'pro', name: 'Pro', credits_type: 'plan_credits', monthly_allowance: 5000, max_upload_mb: 5000,
    conversions_per_window: 500, window_seconds: WINDOW_SECONDS, concurrent_conversions: 20, requests_per_minute: 600,
    result_ttl_hours: RESULT_TTL_HOURS, max_output_mb: 50000,
  },
  unmetered: {
    id: 'unmetered', name: 'Unmetered', credits_type: 'unmetered', monthly_allowance: 0, max_upload_mb: 10000,
    conversions_per_window: 100000, window_seconds: WINDOW_SECONDS, concurrent_conversions: 1000,
    requests_per_minute: 60000, result_ttl_hours: RESULT_TTL_HOURS, max_output_mb: 100000,
  },
};

export function isPlanId(value: unknown): value is PlanId {
  return typeof value === 'string' && (PLAN_IDS as readonly string[]).includes(value);
}

/** MB in plan limits is 2^20 bytes, as proxies count it. */
export const BYTES_PER_MB = 1024 * 1024;
