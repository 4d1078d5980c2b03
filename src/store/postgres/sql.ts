import type pg from 'pg';
import { ACTIVE_STATUSES } from '../../model/status.ts';

/** A pool or one of its clients inside a transaction: both answer queries. */
export type Queryable = pg.Pool | pg.PoolClient;

/** The statuses of a conversion not ended yet, as a parameter (`status = ANY($n::text[])`). */
export const ACTIVE = [...ACTIVE_STATUSES];

/**
 * An advisory lock's number for the key in $1, within the schema's name: advisory locks are the
 * database's, so two convd on two schemas of one database are two stores.
 */
export const LOCK_KEY = "hashtextextended(current_schema() || ':' || $1, 0)";

/** A record kept whole as `jsonb` in its table's `doc` column. */
export interface Doc<T> {
  doc: T;
}

/** The rows of a named (prepared once per connection) statement. */
export async function queryRows<T>(db: Queryable, name: string, text: string, values: unknown[]): Promise<T[]> {
  return (await db.query<T & pg.QueryResultRow>({ name, text, values })).rows;
}

/** The records a statement selects (`SELECT doc …`, `RETURNING doc`). */
export async function queryDocs<T>(db: Queryable, name: string, text: string, values: unknown[]): Promise<T[]> {
  return (await queryRows<Doc<T>>(db, name, text, values)).map((row) => row.doc);
}

/** The first record a statement selects, if any. */
export async function queryDoc<T>(db: Queryable, name: string, text: string, values: unknown[]): Promise<T | undefined> {
  return (await queryDocs<T>(db, name, text, values))[0];
}

/** The number a statement selects as `n` (0 for none, as `sum` of no rows gives). */
export async function queryCount(db: Queryable, name: string, text: string, values: unknown[]): Promise<number> {
  const [row] = await queryRows<{ n: string | number | null }>(db, name, text, values);
  return Number(row?.n ?? 0);
}

/**
 * A record as jsonb text. PostgreSQL's jsonb cannot hold the NUL character, which a string of a
 * request (an option) or of an engine (an error message) may contain: it becomes U+FFFD, as an
 * undecodable byte would.
 */
export function toJson(value: unknown): string {
  return JSON.stringify(value, (_key, field: unknown) => (typeof field === 'string' && field.includes('\u0000') ? field.replaceAll('\u0000', '\uFFFD') : field));
}
