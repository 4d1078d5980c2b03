/**
 * A data dir as a daemon leaves it once it has run a while, for the benches that judge the
 * service's own cost per conversion: one account, and enough ended conversions (expired results,
 * some failures, spread over the last 25 days, none due for pruning) that every one of the
 * store's shards holds some, so each of its files exists.
 *
 * A fresh data dir makes a shard's two files with its first write. On the development box's file
 * system (ext4 without a journal, where creating a file scans recently freed inodes) that first
 * write costs 1.4-4.1 ms of CPU against 0.3 ms for a later one (docs/benchmarks.md, 2026-12-04
 * evening), and with 1,024 shards it falls on most of the few hundred conversions a bench
 * times: a cost of a new data dir, paid once per shard, that a service running for a day no
 * longer pays.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { DEFAULT_SHARDS } from '../../src/store/lowdb-store.ts';
import { seedAccounts, seedHistory } from './seed.ts';

/** The store's shards (the daemon's default), two files each. */
const SHARD_FILES = DEFAULT_SHARDS * 2;
/** Ended conversions seeded at a time until every shard holds one (about 1,024 x ln 1,024 in all). */
const BATCH = 4_000;
const MOST = 40_000;

export interface SteadyDataDir {
  apiKey: string;
  /** Says what the data dir holds, for a bench's notes. */
  note: string;
}

export async function steadyDataDir(dataDir: string): Promise<SteadyDataDir> {
  const [owner] = await seedAccounts(dataDir, 1, 'unmetered');
  let seeded = 0;
  const files = async () => (await readdir(join(dataDir, 'store', 'conversions')).catch(() => [])).length;
  while ((await files()) < SHARD_FILES) {
    if (seeded >= MOST) throw new Error(`${seeded} conversions seeded and still not every shard's files exist`);
    await seedHistory(dataDir, owner!.accountId, BATCH, 25, seeded);
    seeded += BATCH;
  }
  return {
    apiKey: owner!.apiKey,
    note: `data dir as after a while of use: every store shard's files exist (${seeded.toLocaleString('en-US')} ended conversions of the bench's account seeded before the daemon starts; what a fresh dir adds: docs/benchmarks.md)`,
  };
}
