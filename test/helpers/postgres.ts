/**
 * A PostgreSQL schema of its own for each suite: the development and CI machines run PostgreSQL
 * on 127.0.0.1:5432 (trust auth, database `test`); CONVD_TEST_DATABASE_URL names another. A schema
 * per suite keeps suites that run at once apart, and is dropped at the end.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export const TEST_DATABASE_URL = process.env.CONVD_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Why the PostgreSQL suites cannot run here, or false. In CI they always run (and fail without a server). */
export async function postgresSkip(): Promise<string | false> {
  if (process.env.CI === 'true') return false;
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    return false;
  } catch (error) {
    return `PostgreSQL is not reachable at ${TEST_DATABASE_URL.replace(/\/\/[^@/]*@/, '//')}: ${error instanceof Error ? error.message : String(error)}`;
  } finally {
    await client.end().catch(() => undefined);
  }
}

export interface TestSchema {
  /** The test database's URL with this schema as its search path. */
  url: string;
  name: string;
  drop(): Promise<void>;
}

export async function freshSchema(): Promise<TestSchema> {
  const name = `convd_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE SCHEMA ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(TEST_DATABASE_URL);
  url.searchParams.set('options', `-c search_path=${name}`);
  return {
    url: url.href,
    name,
    async drop() {
      const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
      await client.connect();
      try {
        await client.query(`DROP SCHEMA IF EXISTS ${name} CASCADE`);
      } finally {
        await client.end();
      }
    },
  };
}
