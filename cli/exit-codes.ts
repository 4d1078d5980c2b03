import type { ConversionStatus } from '../src/model/status.ts';

/** The exit codes: scripts rely on them, so they never change. */
export const EXIT = {
  ok: 0,
  error: 1,
  usage: 2,
  auth: 3,
  notFound: 4,
  conversionFailed: 5,
  waitTimeout: 6,
  limits: 7,
  credits: 8,
} as const;

/**
 * A long-running command (watch) stopped by a second Ctrl-C that cancelled work in flight: the
 * shell's code for death by SIGINT, outside the table above on purpose.
 */
export const EXIT_INTERRUPTED = 130;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT] | typeof EXIT_INTERRUPTED;

/** API error codes with their exit code; anything not listed falls back to the HTTP status. */
const BY_CODE: Readonly<Record<string, ExitCode>> = {
  unauthenticated: EXIT.auth,
  forbidden: EXIT.auth,
  not_found: EXIT.notFound,
  // The result is gone for good: to a script that is the same as "not there".
  expired: EXIT.notFound,
  validation_failed: EXIT.usage,
  unsupported_conversion: EXIT.usage,
  rate_limited: EXIT.limits,
  concurrency_limit: EXIT.limits,
  engine_time_exhausted: EXIT.limits,
  file_too_large: EXIT.limits,
  insufficient_credits: EXIT.credits,
  free_quota_exhausted: EXIT.credits,
};

const BY_STATUS: Readonly<Record<number, ExitCode>> = {
  400: EXIT.usage,
  401: EXIT.auth,
  402: EXIT.credits,
  403: EXIT.auth,
  404: EXIT.notFound,
  410: EXIT.notFound,
  413: EXIT.limits,
  422: EXIT.usage,
  429: EXIT.limits,
};

/** Exit code for an error the API (or the transport) reported. */
export function exitCodeForApiError(code: string, status: number | null): ExitCode {
  return BY_CODE[code] ?? (status !== null ? BY_STATUS[status] : undefined) ?? EXIT.error;
}

/** Exit code for a conversion that reached `status` while the CLI waited for it. */
export function exitCodeForStatus(status: ConversionStatus): ExitCode {
  switch (status) {
    case 'succeeded':
      return EXIT.ok;
    case 'failed':
    case 'cancelled':
      return EXIT.conversionFailed;
    case 'expired':
      return EXIT.notFound;
    default:
      // Still active: only reached when a wait ran out.
      return EXIT.waitTimeout;
  }
}
