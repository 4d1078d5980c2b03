/**
 * A PostgreSQL database of its own for each suite: the development and CI machines run
 * PostgreSQL 15 on 127.0.0.1:5432 (trust auth, database `test`); CONVD_TEST_DATABASE_URL names
 * another server. Each suite creates its databases there and drops them at the end, so suites
 * running at once never meet and nothing is left behind. Without a server the suites fail with a
 * message naming what to install: they never skip in silence.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { PostgresStore } from '../../src/store/postgres/postgres-store.ts';

export const TEST_DATABASE_URL = process.env.CONVD_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

const where = () => TEST_DATABASE_URL.replace(/\/\/[^@/]*@/, '//');

async function admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
  } catch (error) {
    throw new Error(
      `PostgreSQL is not reachable at ${where()} (${error instanceof Error ? error.message : String(error)}): the PostgreSQL suites need a server. `
      + 'Install and start one (Debian: apt-get install postgresql; pg_ctlcluster 15 main start), with a role that may create databases, '
      + 'or name another with CONVD_TEST_DATABASE_URL=postgres://user@host:5432/db',
    );
  }
  try {
    return await work(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

export interface TestDatabase {
  /** The new database's URL. */
  url: string;
  name: string;
  drop(): Promise<void>;
}

/** A new, empty database on the test server; `drop` removes it even with connections left open. */
export async function freshDatabase(): Promise<TestDatabase> {
  const name = `convd_test_${randomBytes(6).toString('hex')}`;
  await admin((client) => client.query(`CREATE DATABASE ${name}`));
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/${name}`;
  return {
    url: url.href,
    name,
    drop: () => admin((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
  };
}

/** A fresh database and `count` stores on it, as the nodes of a cluster; `close` ends them and drops it. */
export async function nodesOnFreshDatabase(count: number): Promise<{ database: TestDatabase; stores: PostgresStore[]; close(): Promise<void> }> {
  const database = await freshDatabase();
  const stores = await Promise.all(Array.from({ length: count }, () => PostgresStore.open({ url: database.url, poolSize: 4 })));
  return {
    database,
    stores,
    async close() {
      await Promise.all(stores.map((store) => store.close()));
      await database.drop();
    },
  };
}
