/**
 * The store or the files' place cannot be used at start (a database or bucket that does not
 * answer, a database another daemon holds): the daemon says so in one line and exits 1, as it
 * does for a port in use, rather than with a stack trace.
 */
export class StoreUnavailableError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'StoreUnavailableError';
  }
}

/** The message of whatever a driver threw, for one line. */
export function reasonOf(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length > 0) return reasonOf(error.errors[0]);
  const text = error instanceof Error ? error.message || error.name : String(error);
  const code = (error as NodeJS.ErrnoException).code;
  return text || code || 'unknown error';
}
