/**
 * postgres-get-throughput: GET /v1/conversions/{id} throughput of a daemon on the PostgreSQL store
 * against a daemon on the lowdb store, same run, same machine, driven as get-throughput drives its
 * two servers: one finished conversion per account, 16 keep-alive connections from a load generator
 * of its own, rounds alternating between the two daemons, the best round of each. On PostgreSQL
 * the key, its account and the settings are kept for a second (SecondCache), and so is an ended
 * conversion (PostgresStore.getConversion): a repeated GET of a finished conversion is answered without a query,
 * as lowdb answers from memory, and the bench's figure is the cost of that path. A conversion still
 * queued or running is read from the database on every GET (one query), which this bench does not
 * measure. The database is the bench's own, on the server of bench/lib/postgres.ts, dropped at the
 * end. Target (issue #29): at least 0.6x of lowdb's throughput.
 */
import pg from 'pg';
import { checkAllOk, rate, targetsOf as throughputTargets } from './get-throughput.ts';
import { cpuTimeMs } from './lib/cpu.ts';
import { startBenchDaemon, type BenchDaemon } from './lib/daemon.ts';
import { runLoadProcess, type LoadResult, type LoadTarget } from './lib/load.ts';
import { createBenchDatabase, seedPostgresAccounts } from './lib/postgres.ts';
import { removeDir, tempDir } from './lib/processes.ts';
import { seedAccounts, type SeededAccount } from './lib/seed.ts';
import type { BenchResult } from './types.ts';

/** As get-throughput: 16 connections over 8 unmetered accounts (one account's token bucket would refuse within seconds). */
const CONNECTIONS = 16;
const ACCOUNTS = 8;
const WARMUP_MS = 1000;
const DURATION_MS = 3000;
const ROUNDS = 2;
const TARGET_RATIO = 0.6;

/** get-throughput's targets, and the size of one answer. */
async function targetsOf(daemon: BenchDaemon, accounts: SeededAccount[]): Promise<{ targets: LoadTarget[]; bodyBytes: number }> {
  const { targets, sample } = await throughputTargets(daemon, accounts);
  return { targets, bodyBytes: sample.body.length };
}

interface Measured {
  result: LoadResult;
  /** Daemon CPU time over the whole run, warm-up included. */
  daemonCpuMs: number;
  /** CPU time of the PostgreSQL server processes serving the daemon over the same run (0 for lowdb). */
  databaseCpuMs: number;
  /** Requests answered over the whole run (estimated from the measured window's rate). */
  totalRequests: number;
}

/**
 * CPU time of each server process (backend) of the daemon's connections, by pid. The database's
 * processes are this machine's (the bench reads their /proc), when the server is local.
 */
async function backendCpu(client: pg.Client | null): Promise<Map<number, number>> {
  const cpu = new Map<number, number>();
  if (!client) return cpu;
  const { rows } = await client.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'convd'");
  for (const { pid } of rows) {
    const ms = await cpuTimeMs(pid).catch(() => null);
    if (ms !== null) cpu.set(pid, ms);
  }
  return cpu;
}

async function measured(daemon: BenchDaemon, targets: LoadTarget[], database: pg.Client | null): Promise<Measured> {
  const before = await cpuTimeMs(daemon.pid);
  const backendsBefore = await backendCpu(database);
  const result = await runLoadProcess({ connections: CONNECTIONS, warmupMs: WARMUP_MS, durationMs: DURATION_MS, host: daemon.host, port: daemon.port, targets });
  const daemonCpuMs = (await cpuTimeMs(daemon.pid)) - before;
  // A connection the pool opened during the run counts from its start.
  let databaseCpuMs = 0;
  for (const [pid, ms] of await backendCpu(database)) databaseCpuMs += ms - (backendsBefore.get(pid) ?? 0);
  return { result, daemonCpuMs, databaseCpuMs, totalRequests: (result.requests * (WARMUP_MS + DURATION_MS)) / DURATION_MS };
}

export async function benchPostgresGetThroughput(): Promise<BenchResult> {
  const notes: string[] = [];
  const database = await createBenchDatabase();
  const pgDir = await tempDir('pg-get');
  const lowdbDir = await tempDir('lowdb-get');
  const daemons: BenchDaemon[] = [];
  let client: pg.Client | null = null;
  try {
    const pgAccounts = await seedPostgresAccounts(database.url, Array.from({ length: ACCOUNTS }, () => 'unmetered' as const));
    const onPostgres = await startBenchDaemon({ dataDir: pgDir, apiKey: pgAccounts[0]!.apiKey, args: ['--database-url', database.url] });
    daemons.push(onPostgres);
    const lowdbAccounts = await seedAccounts(lowdbDir, ACCOUNTS, 'unmetered');
    // The lowdb store whatever the shell's environment names.
    const onLowdb = await startBenchDaemon({ dataDir: lowdbDir, apiKey: lowdbAccounts[0]!.apiKey, env: { CONVD_DATABASE_URL: undefined } });
    daemons.push(onLowdb);
    const pgTargets = await targetsOf(onPostgres, pgAccounts);
    const lowdbTargets = await targetsOf(onLowdb, lowdbAccounts);

    client = new pg.Client({ connectionString: database.url, application_name: 'convd-bench' });
    client.on('error', () => undefined);
    await client.connect();
    const local = ['127.0.0.1', 'localhost', '::1', '[::1]'].includes(new URL(database.url).hostname);

    const postgres: Measured[] = [];
    const lowdb: Measured[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      postgres.push(await measured(onPostgres, pgTargets.targets, local ? client : null));
      lowdb.push(await measured(onLowdb, lowdbTargets.targets, null));
    }
    for (const m of postgres) checkAllOk('convd on PostgreSQL', m.result, notes);
    for (const m of lowdb) checkAllOk('convd on lowdb', m.result, notes);
    const { rows } = await client.query<{ n: string }>('SELECT count(*) AS n FROM convd_conversions');
    if (Number(rows[0]!.n) !== ACCOUNTS) notes.push(`INVALID: ${rows[0]!.n} conversions in PostgreSQL, not the ${ACCOUNTS} the daemon on it made`);

    const pgRate = Math.max(...postgres.map((m) => rate(m.result)));
    const lowdbRate = Math.max(...lowdb.map((m) => rate(m.result)));
    const perRequestUs = (m: Measured, cpuMs: number) => (cpuMs * 1000) / m.totalRequests;
    const pgDaemonUs = Math.min(...postgres.map((m) => perRequestUs(m, m.daemonCpuMs)));
    const pgDatabaseUs = Math.min(...postgres.map((m) => perRequestUs(m, m.databaseCpuMs)));
    const lowdbUs = Math.min(...lowdb.map((m) => perRequestUs(m, m.daemonCpuMs)));
    return {
      title: 'GET throughput on PostgreSQL',
      figures: `convd on PostgreSQL ${pgRate.toFixed(0)} req/s vs on lowdb ${lowdbRate.toFixed(0)} req/s`,
      ratio: `${(pgRate / lowdbRate).toFixed(2)}x`,
      target: `>= ${TARGET_RATIO}x`,
      pass: notes.length === 0 && pgRate / lowdbRate >= TARGET_RATIO,
      notes: [
        `${CONNECTIONS} keep-alive connections over ${ACCOUNTS} accounts, best of ${ROUNDS} alternating rounds of ${DURATION_MS / 1000} s (after ${WARMUP_MS / 1000} s warm-up); `
          + `${pgTargets.bodyBytes}-byte body on PostgreSQL, ${lowdbTargets.bodyBytes} on lowdb`,
        local
          ? `CPU per request: daemon on PostgreSQL ${pgDaemonUs.toFixed(1)} us + its PostgreSQL server processes ${pgDatabaseUs.toFixed(1)} us vs daemon on lowdb ${lowdbUs.toFixed(1)} us`
          : `daemon CPU per request: on PostgreSQL ${pgDaemonUs.toFixed(1)} us vs on lowdb ${lowdbUs.toFixed(1)} us (the database's server is not on this machine: its CPU is not counted)`,
        `PostgreSQL ${database.version} at ${new URL(database.url).host}, on the same ${local ? 'machine, sharing its cores with the daemon and the load generator' : 'network'}; the daemon's pool: 10 connections, one of them holding its node lock`,
        ...notes,
      ],
    };
  } finally {
    await client?.end().catch(() => undefined);
    for (const daemon of daemons) await daemon.stop();
    await removeDir(pgDir);
    await removeDir(lowdbDir);
    await database.drop();
  }
}
