import { ConversionFailure } from '../../errors/api-error.ts';
import type { AccountRecord } from '../../model/account.ts';
import type { ConversionRecord } from '../../model/conversion.ts';
import { BYTES_PER_MB } from '../../model/plan.ts';
import { assertTransition, canTransition, type ConversionStatus } from '../../model/status.ts';
import type { Store, UpdateOptions } from '../../store/types.ts';
import type { ConversionService } from '../conversion-service.ts';
import { balanceOf } from '../credits.ts';
import { withoutServerPaths } from '../user-message.ts';
import type { RunnerLog } from './runner-log.ts';

/**
 * The status writes of a run, each a read, check and change of the conversion as one step (a
 * transaction holding its lock, in PostgreSQL). Each first looks whether the conversion is still
 * where the run expects it (a cancel, or an end recorded elsewhere, may have moved it meanwhile:
 * then nothing is written and the answer is null); the move itself is checked against the
 * transition table (src/model/status.ts), the ends' by `finish` and the others' here.
 */
export class RunTransitions {
  constructor(private readonly service: ConversionService, private readonly log: RunnerLog) {}

  /** queued -> fetching (a URL input) or processing. */
  start(id: string): Promise<ConversionRecord | null> {
    return this.transition(id, async (record, tx) => {
      // Only a queued conversion is started (the table also lets a fetching one move on to
      // processing: that is the fetch's own step, `fetched`).
      if (record.status !== 'queued') return null;
      const status = record.input.kind === 'url' ? 'fetching' : 'processing';
      this.log('conversion.started', { id, status });
      // A conversion in none of the store's files yet (a submission with `wait`) starts there too:
      // its end writes both (see ConversionRun.run).
      const unwritten = tx.written?.(id) === false;
      return this.move(tx, record, { status, started_at: this.service.now().toISOString(), progress: status === 'processing' ? 0 : null }, { deferred: unwritten });
      // Nobody is told of a start: on PostgreSQL its commit need not wait for the WAL's flush (a
      // daemon that dies still leaves it committed; only the database server's own crash loses it).
    }, { deferred: true });
  }

  /**
   * fetching -> processing, once a URL's file is in. Its size is known only now: a larger bracket
   * than the one reserved needs the balance to cover it (a ConversionFailure otherwise).
   */
  fetched(id: string, bytes: number, cost: number, account: AccountRecord | undefined): Promise<ConversionRecord | null> {
    return this.transition(id, async (current, tx) => {
      if (current.status !== 'fetching') return null;
      if (cost > current.reserved_credits && account) {
        const balance = await balanceOf(tx, account);
        if (balance.available < cost - current.reserved_credits) {
          throw new ConversionFailure('file_too_large', `The file's size (${Math.ceil(bytes / BYTES_PER_MB)} MB) costs ${cost} credits, more than the balance covers.`);
        }
      }
      return this.move(tx, current, {
        status: 'processing', input_size: bytes, progress: 0, reserved_credits: Math.max(cost, current.reserved_credits),
      }, { deferred: true });
    });
  }

  /** processing -> succeeded, with what `outcome` makes of the conversion as it is now (charge, result). */
  succeed(id: string, size: number, outcome: (current: ConversionRecord) => Partial<ConversionRecord>): Promise<ConversionRecord | null> {
    return this.transition(id, async (current, tx) => {
      if (current.status !== 'processing') return null;
      const patch = outcome(current);
      this.log('conversion.succeeded', { id, size });
      return this.service.finish(current, { status: 'succeeded', ...patch }, tx);
    });
  }

  /**
   * An active conversion -> failed. `known`: the paths the engine was given (its input, its
   * directory), with the words shown instead; `engineMs`: the engines' time it used all the same.
   */
  fail(id: string, code: string, message: string, details?: Readonly<Record<string, number | string>>, known: Readonly<Record<string, string>> = {}, engineMs = 0): Promise<ConversionRecord | null> {
    return this.transition(id, async (record, tx) => {
      if (!canTransition(record.status, 'failed')) return null;
      // The engines' messages name the files they were given: the server's paths, never shown.
      const shown = withoutServerPaths(message, known);
      this.log('conversion.failed', { id, code, ...(shown !== message ? { engine_message: message } : {}) });
      return this.service.finish(record, {
        status: 'failed', credits: 0, error: { code, message: shown, ...(details ? { details: { ...details } } : {}) },
        ...(engineMs > 0 ? { engine_ms: engineMs } : {}),
      }, tx);
    });
  }

  /** A running conversion (fetching, processing) back to the queue: this node stops, the work is not lost. */
  requeue(id: string): Promise<ConversionRecord | null> {
    return this.transition(id, async (record, tx) => {
      if (!canTransition(record.status, 'queued')) return null;
      return this.move(tx, record, { status: 'queued', progress: null, started_at: null });
    });
  }

  /** A conversion's read, check and change as one step (a transaction holding its lock, in PostgreSQL). */
  private transition(id: string, update: (record: ConversionRecord, tx: Store) => Promise<ConversionRecord | null>, options?: UpdateOptions): Promise<ConversionRecord | null> {
    return this.service.store.exclusive(`conversion:${id}`, async (tx) => {
      const record = await tx.getConversion(id);
      return record ? update(record, tx) : null;
    }, options);
  }

  /** A move of a status that does not end the conversion (the ends go through `finish`). */
  private async move(tx: Store, record: ConversionRecord, patch: Partial<ConversionRecord> & { status: ConversionStatus }, options?: UpdateOptions): Promise<ConversionRecord> {
    assertTransition(record.id, record.status, patch.status);
    return (await tx.updateConversion(record.id, patch, options))!;
  }
}
