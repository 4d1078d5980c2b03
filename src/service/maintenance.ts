import { ApiError } from '../errors/api-error.ts';
import type { Settings } from '../model/account.ts';
import type { Store, StorePeek } from '../store/types.ts';

export type Maintenance = Settings['maintenance'];

/**
 * The maintenance switch: while it is on, /v1 answers 503 `api_disabled` with its Retry-After.
 * Read at every keyed request and written here alone, whoever flips it (`convd maintenance`, the
 * owner's page), so the rule for its Retry-After is kept in one place.
 */
export class MaintenanceSwitch {
  /** The store's memory, read at once (StorePeek); taken once: a store's peek never changes. */
  private readonly peek: StorePeek | undefined;

  constructor(private readonly store: Store) {
    this.peek = store.peek;
  }

  async state(): Promise<Maintenance> {
    return (await this.store.getSettings()).maintenance;
  }

  /** The switch as the store holds it in memory now (never to be changed); undefined: ask `state`. */
  stateNow(): Readonly<Maintenance> | undefined {
    return this.peek?.settings()?.maintenance;
  }

  /**
   * Turns the switch on or off; without `retryAfter` the one set before stays. A Retry-After that
   * is not a whole number of seconds, at least 1, is refused (`validation_failed`), nothing written.
   */
  async set(enabled: boolean, retryAfter?: number): Promise<Maintenance> {
    if (retryAfter !== undefined && !(Number.isInteger(retryAfter) && retryAfter >= 1)) {
      throw new ApiError('validation_failed', { details: { fields: { retry_after: { reason: 'invalid_value' } } } });
    }
    const settings = await this.store.getSettings();
    const maintenance: Maintenance = { enabled, retry_after: retryAfter ?? settings.maintenance.retry_after };
    await this.store.putSettings({ ...settings, maintenance });
    await this.store.flush();
    return maintenance;
  }
}
