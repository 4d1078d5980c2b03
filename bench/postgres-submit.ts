/**
 * postgres-submit: Submission latency on the PostgreSQL store with 1,000,000 conversions in it,
 * against the same submissions on the lowdb store holding the same million, in the same run.
 *
 * The history is 25 days of ended conversions (bench/lib/history.ts) over four accounts: 300,000
 * of them the submitting account's (unmetered, as the bootstrap owner is), the rest three
 * metered accounts'. It goes into a database of the bench's own with SQL, after the accounts
 * were made through PostgresStore (which applies the schema), and into a lowdb data dir through
 * LowdbStore; then a compiled daemon starts on each in turn (`--database-url`, or its data dir)
 * and takes the submissions of the submit-latency bench, timed the same way. Both stores are
 * measured empty too (the accounts only): what the million costs each, and what each store costs
 * without it. Each database is dropped at the end.
 */
import pg from 'pg';
import { startBenchDaemon, type BenchDaemon } from './lib/daemon.ts';
import { json, send } from './lib/http.ts';
import { accountIndexOf, makeHistory, seedLowdbHistory, seedPostgresHistory, type History, type HistoryAccount, type SeedFigures } from './lib/history.ts';
import { createBenchDatabase, seedPostgresAccounts } from './lib/postgres.ts';
import { removeDir, tempDir } from './lib/processes.ts';
import { seedAccounts } from './lib/seed.ts';
import { percentile, SUBMISSIONS, timeSubmissions, WARMUP, type SubmissionTimes } from './submit-latency.ts';
import type { BenchResult } from './types.ts';

const HISTORY = 1_000_000;
const DAYS = 25;
/** The submitting account first (unmetered: no limit refuses), then three with credits. */
const PLANS = ['unmetered', 'lite', 'standard', 'pro'] as const;
const TARGET_P99_MS = 20;

interface Measured extends SubmissionTimes {
  startMs: number;
  /** Daemon RSS after the submissions, MB. */
  rssMb: number;
  seed: SeedFigures | null;
}

/** The oldest conversion of the submitting account is served: the daemon sees the history. */
async function checkHistorySeen(daemon: BenchDaemon, history: History, notes: string[], store: string): Promise<void> {
  const first = history.ids.findIndex((_, i) => accountIndexOf(i, PLANS.length) === 0);
  const answer = await send(daemon, 'GET', `/v1/conversions/${history.ids[first]}`, { authorization: `Bearer ${daemon.apiKey}` });
  if (answer.status !== 200 || json<{ id: string }>(answer).id !== history.ids[first]) {
    notes.push(`INVALID: ${store} does not serve the seeded ${history.ids[first]} (answered ${answer.status})`);
  }
}

/**
 * The floor under any acknowledged write on this server: a one-row INSERT committed on its own
 * (a WAL flush), as many in a row as there are submissions, on a table of the bench's database.
 */
async function commitFloor(url: string): Promise<{ p50: number; p99: number }> {
  const client = new pg.Client({ connectionString: url, application_name: 'convd-bench' });
  await client.connect();
  try {
    await client.query('CREATE TABLE convd_bench_floor (id serial PRIMARY KEY, doc jsonb NOT NULL)');
    const doc = JSON.stringify({ padding: 'x'.repeat(800) });
    const times: number[] = [];
    for (let i = 0; i < WARMUP + SUBMISSIONS; i++) {
      const started = performance.now();
      await client.query({ name: 'floor', text: 'INSERT INTO convd_bench_floor (doc) VALUES ($1)', values: [doc] });
      if (i >= WARMUP) times.push(performance.now() - started);
    }
    await client.query('DROP TABLE convd_bench_floor');
    times.sort((a, b) => a - b);
    return { p50: percentile(times, 50), p99: percentile(times, 99) };
  } finally {
    await client.end();
  }
}

/** Rows of the history that belong to the submitting account. */
function ownRows(history: History): number {
  let n = 0;
  for (let i = 0; i < history.ids.length; i++) if (accountIndexOf(i, PLANS.length) === 0) n++;
  return n;
}

interface OnPostgres extends Measured {
  /** Server version and the settings that decide a commit's cost. */
  server: string;
  tableMb: number | null;
  vacuumMs: number | null;
  /** One committed INSERT on this server (measured on the empty database). */
  floor: { p50: number; p99: number } | null;
}

async function onPostgres(history: History | null, notes: string[]): Promise<OnPostgres> {
  const database = await createBenchDatabase();
  const dataDir = await tempDir('pg-submit');
  try {
    // On the empty database only: its own table, beside the store's, and no daemon running yet.
    const floor = history ? null : await commitFloor(database.url);
    const accounts = await seedPostgresAccounts(database.url, [...PLANS]);
    const owner = accounts[0]!;
    const seeded = history
      ? await seedPostgresHistory(database.url, history, accounts.map((a, i): HistoryAccount => ({ accountId: a.accountId, metered: PLANS[i] !== 'unmetered' })))
      : null;
    // --database-url wins over a CONVD_DATABASE_URL the shell may set.
    const daemon = await startBenchDaemon({ dataDir, apiKey: owner.apiKey, args: ['--database-url', database.url] });
    try {
      if (history) await checkHistorySeen(daemon, history, notes, 'the daemon on PostgreSQL');
      const times = await timeSubmissions(daemon);
      const rssMb = (await daemon.memory()).rssKb / 1024;
      let server = '';
      const client = new pg.Client({ connectionString: database.url });
      await client.connect();
      try {
        // Every submission is in the database, beside the history: the daemon wrote there, not to its data dir.
        const { rows } = await client.query<{ n: string }>('SELECT count(*) AS n FROM convd_conversions WHERE account_id = $1', [owner.accountId]);
        const expected = (history ? ownRows(history) : 0) + WARMUP + SUBMISSIONS;
        if (Number(rows[0]!.n) !== expected) notes.push(`INVALID: the submitting account has ${rows[0]!.n} conversions in PostgreSQL, not ${expected}`);
        const setting = async (name: string) => (await client.query<Record<string, string>>(`SHOW ${name}`)).rows[0]![name];
        server = `PostgreSQL ${database.version} on ${new URL(database.url).host} (shared_buffers ${await setting('shared_buffers')}, synchronous_commit ${await setting('synchronous_commit')}, fsync ${await setting('fsync')})`;
      } finally {
        await client.end();
      }
      return { ...times, startMs: daemon.startMs, rssMb, seed: seeded, server, tableMb: seeded?.tableMb ?? null, vacuumMs: seeded?.vacuumMs ?? null, floor };
    } finally {
      await daemon.stop();
    }
  } finally {
    await removeDir(dataDir);
    await database.drop();
  }
}

async function onLowdb(history: History | null, notes: string[]): Promise<Measured> {
  const dataDir = await tempDir('lowdb-submit');
  try {
    const accounts = [];
    for (const plan of PLANS) accounts.push(...(await seedAccounts(dataDir, 1, plan)));
    const seeded = history
      ? await seedLowdbHistory(dataDir, history, accounts.map((a, i): HistoryAccount => ({ accountId: a.accountId, metered: PLANS[i] !== 'unmetered' })))
      : null;
    // The lowdb store whatever the shell's environment names.
    const daemon = await startBenchDaemon({ dataDir, apiKey: accounts[0]!.apiKey, env: { CONVD_DATABASE_URL: undefined } });
    try {
      if (history) await checkHistorySeen(daemon, history, notes, 'the daemon on lowdb');
      const times = await timeSubmissions(daemon);
      return { ...times, startMs: daemon.startMs, rssMb: (await daemon.memory()).rssKb / 1024, seed: seeded };
    } finally {
      await daemon.stop();
    }
  } finally {
    await removeDir(dataDir);
  }
}

export async function benchPostgresSubmitLatency(): Promise<BenchResult> {
  const notes: string[] = [];
  const history = makeHistory(HISTORY, DAYS);
  const full = await onPostgres(history, notes);
  const lowdb = await onLowdb(history, notes);
  const empty = await onPostgres(null, notes);
  const lowdbEmpty = await onLowdb(null, notes);
  const ms = (value: number) => `${value.toFixed(1)} ms`;
  const s = (value: number) => `${(value / 1000).toFixed(1)} s`;
  const mb = (value: number) => `${value.toFixed(0)} MB`;
  const statuses = Object.entries(full.seed!.statuses).map(([status, n]) => `${n.toLocaleString('en')} ${status}`).join(', ');
  const ratio = full.p99 / lowdb.p99;
  return {
    title: 'submission latency on PostgreSQL',
    figures: `PostgreSQL with ${HISTORY.toLocaleString('en')} stored: p50 ${ms(full.p50)} p99 ${ms(full.p99)} vs lowdb with the same: p50 ${ms(lowdb.p50)} p99 ${ms(lowdb.p99)}`,
    ratio: `p99 ${ms(full.p99)}, ${ratio.toFixed(2)}x lowdb's`,
    target: `p99 < ${TARGET_P99_MS} ms`,
    pass: full.p99 < TARGET_P99_MS && notes.length === 0,
    notes: [
      `${SUBMISSIONS} sequential multipart submissions (32x32 PNG, wait=0) after ${WARMUP} warm-up, as submit-latency; max ${ms(full.max)} on PostgreSQL, ${ms(lowdb.max)} on lowdb`,
      `empty stores (the accounts only): PostgreSQL p50 ${ms(empty.p50)} p99 ${ms(empty.p99)} (max ${ms(empty.max)}) vs lowdb p50 ${ms(lowdbEmpty.p50)} p99 ${ms(lowdbEmpty.p99)} (max ${ms(lowdbEmpty.max)})`,
      `history: ${statuses} over ${DAYS} days, ${PLANS.length} accounts, ${ownRows(history).toLocaleString('en')} of them the submitting one's`,
      `seeding: PostgreSQL ${s(full.seed!.ms)} (SQL, multi-row INSERT ... SELECT) + ${s(full.vacuumMs!)} VACUUM ANALYZE/CHECKPOINT, table with indexes ${mb(full.tableMb!)}; lowdb ${s(lowdb.seed!.ms)} (LowdbStore)`,
      `daemon start: PostgreSQL ${s(full.startMs)} with the history (${s(empty.startMs)} empty), lowdb ${s(lowdb.startMs)}; RSS after: ${mb(full.rssMb)} vs lowdb ${mb(lowdb.rssMb)}`,
      `${full.server}; one committed one-row INSERT there, ${SUBMISSIONS} in a row: p50 ${ms(empty.floor!.p50)} p99 ${ms(empty.floor!.p99)}`,
      ...notes,
    ],
  };
}
