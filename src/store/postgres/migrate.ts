import type pg from 'pg';
import { MIGRATIONS, type Migration } from './migrations.ts';
import { LOCK_KEY } from './sql.ts';

/** Held while migrating (within the schema's name): nodes that start together apply each step once. */
const MIGRATION_LOCK = 'convd:migrate';

export interface MigrationReport {
  /** Steps applied by this call, in order. */
  applied: number[];
  /** The schema's version afterwards. */
  version: number;
}

/**
 * Brings the schema to the newest step: each missing step in a transaction of its own, recorded
 * in `convd_schema_migrations`, under an advisory lock so that several nodes starting at once
 * (or `convd migrate` beside a starting node) never apply a step twice. A database whose schema
 * is newer than this convd knows is refused: an older node must not write to it.
 */
export async function migrate(pool: pg.Pool, steps: readonly Migration[] = MIGRATIONS): Promise<MigrationReport> {
  const client = await pool.connect();
  try {
    await client.query(`SELECT pg_advisory_lock(${LOCK_KEY})`, [MIGRATION_LOCK]);
    try {
      await client.query(`CREATE TABLE IF NOT EXISTS convd_schema_migrations (
        version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
      const done = new Set((await client.query<{ version: number }>('SELECT version FROM convd_schema_migrations')).rows.map((row) => row.version));
      const known = Math.max(0, ...steps.map((step) => step.version));
      const newest = Math.max(0, ...done);
      if (newest > known) {
        throw new Error(`the database's schema is at version ${newest}, newer than this convd knows (${known}): upgrade convd`);
      }
      const applied: number[] = [];
      for (const step of [...steps].sort((a, b) => a.version - b.version)) {
        if (done.has(step.version)) continue;
        await client.query('BEGIN');
        try {
          await client.query(step.sql);
          await client.query('INSERT INTO convd_schema_migrations (version, name) VALUES ($1, $2)', [step.version, step.name]);
          await client.query('COMMIT');
        } catch (error) {
          await client.query('ROLLBACK');
          throw new Error(`schema step ${step.version} (${step.name}) failed: ${error instanceof Error ? error.message : String(error)}`);
        }
        applied.push(step.version);
      }
      return { applied, version: Math.max(newest, ...applied) };
    } finally {
      await client.query(`SELECT pg_advisory_unlock(${LOCK_KEY})`, [MIGRATION_LOCK]).catch(() => undefined);
    }
  } finally {
    client.release();
  }
}

/** `convd migrate`: applies the missing steps to the database at `url` and says what it did. */
export async function migrateDatabase(url: string): Promise<MigrationReport> {
  const { default: pg } = await import('pg');
  const pool = new pg.Pool({ connectionString: url, max: 1, application_name: 'convd migrate' });
  try {
    return await migrate(pool);
  } finally {
    await pool.end();
  }
}
