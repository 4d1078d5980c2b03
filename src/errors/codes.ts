/** Every error code the service answers with, and its HTTP status. Codes never change: clients match on them. */
export const ERROR_STATUS = {
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  validation_failed: 422,
  unsupported_conversion: 422,
  file_too_large: 413,
  insufficient_credits: 402,
  free_quota_exhausted: 402,
  rate_limited: 429,
  concurrency_limit: 429,
  engine_time_exhausted: 429,
  idempotency_conflict: 409,
  not_ready: 409,
  invalid_state: 409,
  expired: 410,
  request_timeout: 408,
  method_not_allowed: 405,
  internal_error: 500,
  api_disabled: 503,
} as const;

export type ApiErrorCode = keyof typeof ERROR_STATUS;

/**
 * Codes a failed conversion carries in its `error`, and two of this service's own:
 * `memory_limit` (the engine needed more memory than its limit) and `interrupted` (the service
 * stopped unexpectedly while running it, and again on its one retry: it is not tried a third time).
 */
export const CONVERSION_ERROR_CODES = [
  'input_invalid', 'fetch_failed', 'file_too_large', 'conversion_failed', 'timeout', 'memory_limit', 'interrupted', 'internal_error',
] as const;
export type ConversionErrorCode = (typeof CONVERSION_ERROR_CODES)[number];
