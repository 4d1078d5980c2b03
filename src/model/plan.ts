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
  /** The most files one request merges into a PDF (at most the service's 50); not part of the account object. */
  max_inputs: number;
  /** The most pages one conversion renders (every page of a PDF as images); not part of the account object. */
  max_pages: number;
  /** The most pages one conversion reads by OCR (a scan's pages); not part of the account object. */
  max_ocr_pages: number;
  /**
   * Seconds a conversion may run on each kind of engine (by engine name; a chain has its steps'
   * together). The daemon's `engine_timeout_ms` stays the ceiling over every plan.
   */
  time_limits: EngineTimeLimits;
  /**
   * Engine time the account's conversions submitted in one clock hour (UTC) may use together,
   * whether they succeed or fail, in seconds; past it a submission gets 429
   * `engine_time_exhausted` until the next hour. 0: no allowance (unlimited).
   */
  engine_seconds_per_hour: number;
}

/** The engines a plan names a time limit for. */
export const ENGINE_KINDS = ['image', 'raster', 'pdf', 'pdfops', 'pdfpages', 'data', 'media', 'office', 'markup', 'postscript', 'html', 'ocr'] as const;
export type EngineKind = (typeof ENGINE_KINDS)[number];
export type EngineTimeLimits = Record<EngineKind, number>;

/** Today's limits of the engines, seconds: the paying plans' and the ceiling's defaults. */
const FULL_LIMITS: EngineTimeLimits = {
  image: 120, raster: 120, pdf: 300, pdfops: 300, pdfpages: 120, data: 120, media: 1800, office: 300, markup: 120, postscript: 120, html: 120, ocr: 7200,
};
/** A free plan's: enough for any ordinary file (a 100-page document, a few minutes of audio), far short of stuck work. */
const FREE_LIMITS: EngineTimeLimits = {
  image: 20, raster: 20, pdf: 30, pdfops: 30, pdfpages: 30, data: 20, media: 120, office: 60, markup: 30, postscript: 30, html: 30, ocr: 300,
};
const LITE_LIMITS: EngineTimeLimits = {
  image: 60, raster: 60, pdf: 120, pdfops: 120, pdfpages: 60, data: 60, media: 600, office: 180, markup: 60, postscript: 60, html: 60, ocr: 1200,
};

const WINDOW_SECONDS = 600;
const RESULT_TTL_HOURS = 24;

export const DEFAULT_PLANS: Readonly<Record<PlanId, Plan>> = {
  free: {
    id: 'free', name: 'Free', credits_type: 'free_api_credits', monthly_allowance: 100, max_upload_mb: 100,
    conversions_per_window: 20, window_seconds: WINDOW_SECONDS, concurrent_conversions: 2, requests_per_minute: 30,
    result_ttl_hours: RESULT_TTL_HOURS, max_output_mb: 1000, max_inputs: 10, max_pages: 100, max_ocr_pages: 20,
    time_limits: { ...FREE_LIMITS }, engine_seconds_per_hour: 600,
  },
  lite: {
    id: 'lite', name: 'Lite', credits_type: 'plan_credits', monthly_allowance: 1000, max_upload_mb: 1000,
    conversions_per_window: 100, window_seconds: WINDOW_SECONDS, concurrent_conversions: 5, requests_per_minute: 120,
    result_ttl_hours: RESULT_TTL_HOURS, max_output_mb: 10000, max_inputs: 20, max_pages: 300, max_ocr_pages: 100,
    time_limits: { ...LITE_LIMITS }, engine_seconds_per_hour: 3600,
  },
  standard: {
    id: 'standard', name: 'Standard', credits_type: 'plan_credits', monthly_allowance: 2500, max_upload_mb: 2000,
    conversions_per_window: 250, window_seconds: WINDOW_SECONDS, concurrent_conversions: 10, requests_per_minute: 300,
    result_ttl_hours: RESULT_TTL_HOURS, max_output_mb: 20000, max_inputs: 50, max_pages: 1000, max_ocr_pages: 500,
    time_limits: { ...FULL_LIMITS }, engine_seconds_per_hour: 7200,
  },
  pro: {
    id: 'pro', name: 'Pro', credits_type: 'plan_credits', monthly_allowance: 5000, max_upload_mb: 5000,
    conversions_per_window: 500, window_seconds: WINDOW_SECONDS, concurrent_conversions: 20, requests_per_minute: 600,
    result_ttl_hours: RESULT_TTL_HOURS, max_output_mb: 50000, max_inputs: 50, max_pages: 1000, max_ocr_pages: 500,
    time_limits: { ...FULL_LIMITS }, engine_seconds_per_hour: 14400,
  },
  unmetered: {
    id: 'unmetered', name: 'Unmetered', credits_type: 'unmetered', monthly_allowance: 0, max_upload_mb: 10000,
    conversions_per_window: 100000, window_seconds: WINDOW_SECONDS, concurrent_conversions: 1000,
    requests_per_minute: 60000, result_ttl_hours: RESULT_TTL_HOURS, max_output_mb: 100000, max_inputs: 50, max_pages: 1000, max_ocr_pages: 500,
    time_limits: { ...FULL_LIMITS }, engine_seconds_per_hour: 0,
  },
};

export function isPlanId(value: unknown): value is PlanId {
  return typeof value === 'string' && (PLAN_IDS as readonly string[]).includes(value);
}

/** MB in plan limits is 2^20 bytes, as proxies count it. */
export const BYTES_PER_MB = 1024 * 1024;
