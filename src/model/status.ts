/** Status values of a conversion and the transitions between them that the service allows. */
export const STATUSES = ['queued', 'fetching', 'processing', 'succeeded', 'failed', 'cancelled', 'expired'] as const;
export type ConversionStatus = (typeof STATUSES)[number];

export const ACTIVE_STATUSES: ReadonlySet<ConversionStatus> = new Set(['queued', 'fetching', 'processing']);
export const END_STATUSES: ReadonlySet<ConversionStatus> = new Set(['succeeded', 'failed', 'cancelled', 'expired']);

const TRANSITIONS: Readonly<Record<ConversionStatus, readonly ConversionStatus[]>> = {
  queued: ['fetching', 'processing', 'cancelled', 'failed'],
  fetching: ['processing', 'failed', 'cancelled', 'queued'],
  processing: ['succeeded', 'failed', 'cancelled', 'queued'],
  succeeded: ['expired'],
  failed: [],
  cancelled: [],
  expired: [],
};

/**
 * `-> queued` from fetching/processing exists only for crash recovery and graceful shutdown
 * (work that was interrupted goes back to the queue); nothing else moves a conversion backwards.
 */
export function canTransition(from: ConversionStatus, to: ConversionStatus): boolean {
  return TRANSITIONS[from].includes(to);
}

/** The table is the rule: a caller that moves a conversion otherwise is a bug, and is stopped here. */
export function assertTransition(id: string, from: ConversionStatus, to: ConversionStatus): void {
  if (!canTransition(from, to)) throw new Error(`illegal transition of ${id}: ${from} -> ${to}`);
}

export function isStatus(value: unknown): value is ConversionStatus {
  return typeof value === 'string' && (STATUSES as readonly string[]).includes(value);
}
