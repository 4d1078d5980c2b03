/**
 * A PostgreSQL database of its own for each bench that runs a daemon on the PostgreSQL store:
 * created on the server that CONVD_BENCH_DATABASE_URL (else CONVD_TEST_DATABASE_URL, else the
 * development machines' postgres://postgres@127.0.0.1:5432/test, trust auth) names, and dropped
 * at the end, on an exception or Ctrl-C too. Without a server the bench fails, naming what to
 * install: it never skips in silence.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { PlanId } from '../../src/model/plan.ts';
import { PostgresStore } from '../../src/store/postgres/postgres-store.ts';
// daemon.ts loads processes.ts first: its exit handler (which kills the daemons) runs before this one's.
import { ROOT } from './daemon.ts';
import { seedAccountsIn, type SeededAccount } from './seed.ts';

export const ADMIN_DATABASE_URL = process.env.CONVD_BENCH_DATABASE_URL ?? process.env.CONVD_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** host:port/database of the admin URL, without user or password. */
const where = () => ADMIN_DATABASE_URL.replace(/\/\/[^@/]*@/, '//');

/** Databases this run created and has not dropped yet: dropped on exit whatever happens. */
const created = new Set<string>();

async function admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: ADMIN_DATABASE_URL, connectionTimeoutMillis: 5000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (error) {
    throw new Error(
      `PostgreSQL is not reachable at ${where()} (${error instanceof Error ? error.message : String(error)}): this bench runs a daemon on the PostgreSQL store. `
      + 'Install and start a server (Debian: apt-get install postgresql; pg_ctlcluster 15 main start) with a role that may create databases, '
      + 'or name another with CONVD_BENCH_DATABASE_URL=postgres://user@host:5432/db',
    );
  }
  try {
    return await work(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

export interface BenchDatabase {
  /** The new database's URL (the admin URL with its own database name). */
  url: string;
  name: string;
  /** The server's version, e.g. `15.20`. */
  version: string;
  /** Drops it, even with connections still open (WITH (FORCE)). */
  drop(): Promise<void>;
}

export async function createBenchDatabase(): Promise<BenchDatabase> {
  const name = `convd_bench_${randomBytes(6).toString('hex')}`;
  const version = await admin(async (client) => {
    await client.query(`CREATE DATABASE ${name}`);
    created.add(name);
    return (await client.query<{ server_version: string }>('SHOW server_version')).rows[0]!.server_version.split(' ')[0]!;
  });
  const url = new URL(ADMIN_DATABASE_URL);
  url.pathname = `/${name}`;
  return {
    url: url.href,
    name,
    version,
    async drop() {
      await admin((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
      created.delete(name);
    },
  };
}

/**
 * Accounts with a key each, made through the store's own code (PostgresStore + AccountService),
 * as bench/lib/seed.ts makes them in a data dir; the schema is applied on the way.
 */
export async function seedPostgresAccounts(url: string, plans: PlanId[]): Promise<SeededAccount[]> {
  const store = await PostgresStore.open({ url, poolSize: 2 });
  try {
    return await seedAccountsIn(store, plans);
  } finally {
    await store.close();
  }
}

/**
 * Last resort on exit (after bench/lib/processes.ts has killed the daemons): drops what is left,
 * from a child process, since an exit handler cannot wait for a query.
 */
process.once('exit', () => {
  if (created.size === 0) return;
  const script = `const pg = require('pg');
const client = new pg.Client({ connectionString: process.argv[1], connectionTimeoutMillis: 5000 });
client.connect().then(async () => { for (const name of process.argv.slice(2)) await client.query('DROP DATABASE IF EXISTS ' + name + ' WITH (FORCE)'); }).catch(() => {}).finally(() => client.end());`;
  spawnSync(process.execPath, ['-e', script, ADMIN_DATABASE_URL, ...created], { stdio: 'ignore', timeout: 15_000, cwd: ROOT });
});
