import type { ConversionStatus } from '../../src/model/status.ts';

/**
 * The dashboard's rules, free of React and ink: filters and their keys, how often to poll, how
 * a progress bar looks. The components only arrange them.
 */

/** null: every status. The API filters by one status at a time. */
export type Filter = ConversionStatus | null;

/** In the order ←/→ and Tab move through them. */
export const FILTERS: readonly Filter[] = [null, 'queued', 'fetching', 'processing', 'succeeded', 'failed', 'cancelled', 'expired'];

/** Direct keys for the filters people reach for; the rest are a ←/→ away. */
export const FILTER_KEYS: Readonly<Record<string, Filter>> = {
  a: null,
  u: 'queued',
  p: 'processing',
  s: 'succeeded',
  f: 'failed',
  c: 'cancelled',
};

export function filterLabel(filter: Filter): string {
  return filter ?? 'all';
}

export function stepFilter(filter: Filter, step: 1 | -1): Filter {
  const index = FILTERS.indexOf(filter);
  return FILTERS[(index + step + FILTERS.length) % FILTERS.length]!;
}

/**
 * Milliseconds between polls: about one second, but never more than half the account's
 * requests-per-minute budget (each poll is two requests), so the dashboard never makes its
 * own user hit `rate_limited` (a free plan allows 30 a minute: one poll every 8 s).
 */
export function pollInterval(requestsPerMinute: number | undefined): number {
  if (!requestsPerMinute || requestsPerMinute <= 0) return 1000;
  return Math.max(1000, Math.ceil((2 * 60_000) / (requestsPerMinute / 2)));
}

export function progressBar(percent: number | null, width: number): string {
  const clamped = Math.max(0, Math.min(100, percent ?? 0));
  const filled = Math.round((clamped / 100) * width);
  return `${'█'.repeat(filled)}${'░'.repeat(width - filled)}`;
}

/** `12:03:04` for today, `Nov 21 12:03` before. */
export function shortTime(iso: string, now = new Date()): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  const time = date.toTimeString().slice(0, 8);
  if (date.toDateString() === now.toDateString()) return time;
  return `${date.toLocaleString('en', { month: 'short' })} ${date.getDate()} ${time.slice(0, 5)}`;
}

/** The colour ink should use for a status (undefined: the terminal's own). */
export function statusColor(status: ConversionStatus): string | undefined {
  switch (status) {
    case 'succeeded':
      return 'green';
    case 'failed':
      return 'red';
    case 'cancelled':
    case 'expired':
      return 'gray';
    default:
      return 'yellow';
  }
}
