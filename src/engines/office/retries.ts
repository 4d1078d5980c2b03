/**
 * Documents the office engine tried a second way after LibreOffice crashed opening them
 * (second-way.ts), by outcome. Counted here, in the engine's layer, for the daemon's metrics to
 * read at scrape time (`convd_office_retries_total`): an engine knows nothing of the daemon.
 */
export type RetryOutcome = 'succeeded' | 'failed';

const counts: Record<RetryOutcome, number> = { succeeded: 0, failed: 0 };

export function countRetry(outcome: RetryOutcome): void {
  counts[outcome] += 1;
}

/** The counts since this process started. */
export function officeRetries(): Readonly<Record<RetryOutcome, number>> {
  return { ...counts };
}
