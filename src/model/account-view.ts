import type { CreditsType } from './plan.ts';

/** The account object as the API returns it (GET /v1/account), and as the CLI prints it with --json. */
export interface AccountView {
  plan: { id: string; name: string };
  credits: { type: CreditsType; remaining: number | null; monthly_allowance: number; resets_at: string | null };
  limits: {
    max_upload_mb: number; conversions_per_window: number; window_seconds: number; concurrent_conversions: number;
    active_conversions: number; requests_per_minute: number; result_ttl_hours: number;
    /** Seconds a conversion may run, per engine kind. */
    time_limits: Record<string, number>;
  };
  /** Engine time of the conversions submitted this clock hour (UTC), against the plan's allowance (0: none). */
  engine_time: { allowance_seconds: number; used_seconds: number; remaining_seconds: number | null; resets_at: string };
}
