/**
 * A large history of ended conversions (a million, for the postgres-submit bench), the same rows
 * for the PostgreSQL store and for lowdb: the ids are made once, in creation order, and each record
 * is built from its row number, so both stores hold the same history under their own account ids.
 *
 * Into PostgreSQL the records go straight in with SQL (multi-row INSERT ... SELECT from a jsonb
 * array, two batches in flight), with the `idem_key` column the store itself would set; into
 * lowdb through LowdbStore itself, as bench/lib/seed.ts does.
 */
import { randomFillSync } from 'node:crypto';
import { join } from 'node:path';
import pg from 'pg';
import { monotonicFactory } from 'ulid';
import type { ConversionRecord, ConversionResult } from '../../src/model/conversion.ts';
import type { ConversionStatus } from '../../src/model/status.ts';
import { LowdbStore } from '../../src/store/lowdb-store.ts';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** What every plan keeps a result for (src/model/plan.ts RESULT_TTL_HOURS). */
const RESULT_TTL_MS = 24 * HOUR;

export interface HistoryAccount {
  accountId: string;
  /** A plan with credits: its succeeded conversions were charged. */
  metered: boolean;
}

export interface History {
  /** Conversion ids, oldest first. */
  ids: string[];
  /** Creation time (ms) of each. */
  createdMs: Float64Array;
  /** The moment the history was made for: results of the last 24 h before it are still there. */
  nowMs: number;
}

/**
 * Ids exactly as src/model/ids.ts newConversionId makes them ('cnv_' + a monotonic ULID,
 * lowercase), from a factory of this history's own: the service's factory is monotonic, so
 * feeding it times older than an id it already made would give every later id that time.
 */
function idMaker(): (ms: number) => string {
  const pool = Buffer.alloc(4096);
  let at = pool.length;
  const random = () => {
    if (at === pool.length) {
      randomFillSync(pool);
      at = 0;
    }
    return pool[at++]! / 256;
  };
  const next = monotonicFactory(random);
  return (ms) => `cnv_${next(ms).toLowerCase()}`;
}

/**
 * `count` conversions spread evenly over the `days` days before (up to ten minutes before) now,
 * oldest first. Pruning keeps 30 days, so nothing is pruned at the daemon's start.
 */
export function makeHistory(count: number, days: number): History {
  const nowMs = Date.now();
  const first = nowMs - days * DAY;
  const step = (days * DAY - 10 * 60_000) / count;
  const ids = new Array<string>(count);
  const createdMs = new Float64Array(count);
  const make = idMaker();
  for (let i = 0; i < count; i++) {
    const ms = Math.floor(first + i * step);
    createdMs[i] = ms;
    ids[i] = make(ms);
  }
  return { ids, createdMs, nowMs };
}

const PAIRS = [
  { source: 'png', target: 'webp', mime: 'image/webp', ext: 'webp', name: 'photo', options: { quality: 80 }, credits: 1 },
  { source: 'jpg', target: 'avif', mime: 'image/avif', ext: 'avif', name: 'holiday', options: { quality: 60 }, credits: 1 },
  { source: 'png', target: 'jpg', mime: 'image/jpeg', ext: 'jpg', name: 'scan', options: { quality: 90 }, credits: 1 },
  { source: 'docx', target: 'pdf', mime: 'application/pdf', ext: 'pdf', name: 'report', options: {}, credits: 2 },
] as const;

/** Which of `accounts` owns row `i`: of each 10 rows, 3 the first account, the rest the others in turn. */
export function accountIndexOf(i: number, accounts: number): number {
  const slot = i % 10;
  return slot < 3 || accounts === 1 ? 0 : 1 + ((slot - 3) % (accounts - 1));
}

/**
 * Row `i` of the history, owned by `account`, with every field of a ConversionRecord as the
 * service leaves it once ended. 1 row in 13 failed, 1 in 97 was cancelled while queued; the rest
 * succeeded, and their results expired 24 h after (the expiry sweep's doing), except those of the
 * last 24 h, still `succeeded` with a result to download: a daemon on this history finds nothing
 * to expire or prune at its start. No callback URLs (a start offers recent ends to webhooks again).
 */
export function historyRecord(history: History, i: number, account: HistoryAccount): ConversionRecord {
  const created = history.createdMs[i]!;
  const pair = PAIRS[i % PAIRS.length]!;
  const cancelled = i % 97 === 0;
  const failed = !cancelled && i % 13 === 0;
  const started = cancelled ? null : created + 40 + (i % 50);
  const finished = cancelled ? created + 2000 : started! + 300 + (i % 700);
  let status: ConversionStatus;
  let result: ConversionResult | null = null;
  if (cancelled) status = 'cancelled';
  else if (failed) status = 'failed';
  else {
    const expires = finished + RESULT_TTL_MS;
    status = expires > history.nowMs ? 'succeeded' : 'expired';
    result = { filename: `${pair.name}-${i}.${pair.ext}`, size: 40_000 + (i % 1000) * 53, mime: pair.mime, expires_at: new Date(expires).toISOString() };
  }
  const charged = result !== null && account.metered;
  const keyed = i % 4 === 0;
  const url = i % 25 === 0;
  return {
    id: history.ids[i]!,
    account_id: account.accountId,
    status,
    source: pair.source,
    target: pair.target,
    variant: null,
    options: { ...pair.options },
    original_name: `${pair.name}-${i}.${pair.source}`,
    input_size: 150_000 + (i % 1000) * 37,
    input: url ? { kind: 'url', url: `https://files.example.com/in/${pair.name}-${i}.${pair.source}` } : { kind: 'file', sha256: i.toString(16).padStart(8, '0').repeat(8) },
    progress: cancelled ? null : failed ? 0 : 100,
    reserved_credits: 0,
    credits: charged ? pair.credits : 0,
    charged_at: charged ? new Date(finished).toISOString() : null,
    created_at: new Date(created).toISOString(),
    started_at: started === null ? null : new Date(started).toISOString(),
    finished_at: new Date(finished).toISOString(),
    result,
    error: failed ? { code: 'input_invalid', message: `The input cannot be decoded as ${pair.source}: corrupt header` } : null,
    callback_url: null,
    idempotency_key: keyed ? `seed-${i}` : null,
    request_fingerprint: keyed ? i.toString(16).padStart(16, '0').repeat(4) : null,
  };
}

export interface SeedFigures {
  rows: number;
  ms: number;
  /** Rows per status. */
  statuses: Record<string, number>;
}

function countStatus(statuses: Record<string, number>, status: string): void {
  statuses[status] = (statuses[status] ?? 0) + 1;
}

const BATCH = 5000;
const IN_FLIGHT = 2;

/**
 * Inserts the history into the convd_conversions table of `url` (the schema must be there: the
 * accounts were made first, through PostgresStore). Then VACUUM (ANALYZE), as autovacuum would
 * have done long since on a database that grew to this size, and a CHECKPOINT (where the role may),
 * so that neither runs into the measurement.
 */
export async function seedPostgresHistory(url: string, history: History, accounts: HistoryAccount[]): Promise<SeedFigures & { vacuumMs: number; tableMb: number }> {
  const started = performance.now();
  const pool = new pg.Pool({ connectionString: url, max: IN_FLIGHT, application_name: 'convd-bench-seed' });
  pool.on('error', () => undefined);
  const statuses: Record<string, number> = {};
  try {
    const inFlight = new Set<Promise<unknown>>();
    let failure: unknown;
    for (let from = 0; from < history.ids.length; from += BATCH) {
      const rows: ConversionRecord[] = [];
      for (let i = from; i < Math.min(from + BATCH, history.ids.length); i++) {
        const record = historyRecord(history, i, accounts[accountIndexOf(i, accounts.length)]!);
        countStatus(statuses, record.status);
        rows.push(record);
      }
      const query = pool.query(
        `INSERT INTO convd_conversions (id, doc, idem_key)
         SELECT d->>'id', d, d->>'idempotency_key' FROM jsonb_array_elements($1::jsonb) AS d`,
        [JSON.stringify(rows)],
      ).catch((error: unknown) => {
        failure ??= error;
      });
      inFlight.add(query);
      void query.finally(() => inFlight.delete(query));
      if (inFlight.size >= IN_FLIGHT) await Promise.race(inFlight);
      if (failure) throw failure;
    }
    await Promise.all(inFlight);
    if (failure) throw failure;
    const ms = performance.now() - started;
    const vacuumStarted = performance.now();
    await pool.query('VACUUM (ANALYZE) convd_conversions');
    await pool.query('CHECKPOINT').catch(() => undefined);
    const vacuumMs = performance.now() - vacuumStarted;
    const { rows } = await pool.query<{ bytes: string }>("SELECT pg_total_relation_size('convd_conversions') AS bytes");
    return { rows: history.ids.length, ms, statuses, vacuumMs, tableMb: Number(rows[0]!.bytes) / 1e6 };
  } finally {
    await pool.end();
  }
}

/** The same history into a data dir's lowdb store, through LowdbStore (one flush, at close). */
export async function seedLowdbHistory(dataDir: string, history: History, accounts: HistoryAccount[]): Promise<SeedFigures> {
  const started = performance.now();
  const store = await LowdbStore.open({ dir: join(dataDir, 'store') });
  const statuses: Record<string, number> = {};
  try {
    for (let i = 0; i < history.ids.length; i++) {
      const record = historyRecord(history, i, accounts[accountIndexOf(i, accounts.length)]!);
      countStatus(statuses, record.status);
      await store.insertConversion(record);
    }
  } finally {
    await store.close();
  }
  return { rows: history.ids.length, ms: performance.now() - started, statuses };
}
