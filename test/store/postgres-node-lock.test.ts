/**
 * The node lock on PostgreSQL (one advisory lock key, held on a connection of its own for as long
 * as the store is open): the nodes of a cluster (database and bucket) hold it shared, any number
 * at once; a sole node (database without a bucket) and `convd store import` hold it alone. So a
 * sole node is refused beside a cluster's nodes and beside another sole node, a cluster node
 * beside a sole node, each in words that say what runs there; the admin commands' stores take
 * nothing and open beside anything; a node's lock is gone the moment its store closed (a restart
 * is not refused); and a node whose lock connection the server drops is told.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { DatabaseInUseError, PostgresStore, type NodeLockMode } from '../../src/store/postgres/postgres-store.ts';
import { freshDatabase, type TestDatabase } from '../helpers/postgres.ts';
import { waitUntil } from '../helpers/ops-support.ts';

describe('PostgreSQL node lock: shared by the nodes of a cluster, alone for a sole node or an import', () => {
  let database: TestDatabase;
  const open: PostgresStore[] = [];
  before(async () => {
    database = await freshDatabase();
  });
  after(async () => {
    await Promise.all(open.map((store) => store.close().catch(() => undefined)));
    await database?.drop();
  });

  const node = async (nodeLock: NodeLockMode | undefined, onConnectionLost?: (error: Error) => void): Promise<PostgresStore> => {
    const store = await PostgresStore.open({ url: database.url, poolSize: 2, ...(nodeLock ? { nodeLock } : {}), ...(onConnectionLost ? { onConnectionLost } : {}) });
    open.push(store);
    return store;
  };
  const close = async (store: PostgresStore) => {
    open.splice(open.indexOf(store), 1);
    await store.close();
  };
  const refused = (mode: NodeLockMode, holder: NodeLockMode, words: RegExp) => async () => {
    const error = await node(mode).then(() => null, (failure: unknown) => failure);
    assert.ok(error instanceof DatabaseInUseError, `refused: ${String(error)}`);
    assert.equal(error.holder, holder);
    assert.match(error.message, /^another convd daemon uses this database: /);
    assert.match(error.message, words);
  };

  it('cluster nodes share it; a sole node (or an import) is refused beside them, and may start once they stopped', async () => {
    const nodes = [await node('cluster'), await node('cluster'), await node('cluster')];
    await refused('sole', 'cluster', /nodes of a cluster \(this database and a bucket\) run on it; a daemon without the bucket cannot join them/)();
    // Admin commands take no lock: they run beside the nodes.
    await close(await node(undefined));
    // Each node's lock is its own: the last one to stop frees the database.
    await close(nodes[0]!);
    await close(nodes[1]!);
    await refused('sole', 'cluster', /nodes of a cluster/)();
    await close(nodes[2]!);
    await close(await node('sole'));
  });

  it('a sole node holds it alone: a second sole node and a cluster node are refused, each in words', async () => {
    const sole = await node('sole');
    await refused('sole', 'sole', /a daemon without a bucket \(or a `convd store import`\) holds it/)();
    await refused('cluster', 'sole', /a daemon without a bucket \(or a `convd store import`\) holds it alone; stop it before nodes with a bucket \(--blob-url\) start on it/)();
    await close(await node(undefined));
    await close(sole);
    const cluster = await node('cluster');
    await close(cluster);
  });

  it('a node\'s lock is gone when its store has closed, not a moment later: a restart at once is not refused', async () => {
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    try {
      const held = async () => Number((await admin.query<{ n: string }>(
        "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
      )).rows[0]!.n);
      for (let i = 0; i < 30; i++) {
        await close(await node(i % 2 ? 'sole' : 'cluster'));
        assert.equal(await held(), 0, `round ${i}: released by the close itself`);
      }
    } finally {
      await admin.end();
    }
  });

  it("a cluster node is told when the server drops its lock's connection (the lock goes with it)", async () => {
    const lost: Error[] = [];
    await node('cluster', (error) => lost.push(error));
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    try {
      const { rows } = await admin.query<{ pid: number }>(
        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND mode = 'ShareLock' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
      );
      assert.equal(rows.length, 1, 'one connection holds the shared lock');
      await admin.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
      await waitUntil('the loss said', async () => (lost.length > 0 ? true : undefined), 5000);
      // Nothing holds it now: a sole node may start (the daemon told stops itself).
      await close(await node('sole'));
    } finally {
      await admin.end();
    }
  });
});
