/**
 * Edits a stopped daemon's store files the way the store writes them (two copies with a sequence
 * number and checksum, src/store/durable-json-file.ts): for tests that move a date into the past
 * or change a balance between two runs of the daemon.
 */
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { DurableJsonFile } from '../../src/store/durable-json-file.ts';

/** Reads `<base>.{a,b}.json`, lets `change` edit the data, writes it as the newest copy. */
export async function editStoreFile<T>(base: string, change: (data: T) => void): Promise<void> {
  const file = new DurableJsonFile<T>(base);
  const data = await file.read();
  if (data === null) throw new Error(`${base}: nothing stored there`);
  change(data);
  await file.write(data);
  await file.close();
}

/** The bases of the conversion shards that hold data (`<dataDir>/store/conversions/NNN`); the daemon makes all files empty at its first start. */
export async function shardBases(dataDir: string): Promise<string[]> {
  const dir = join(dataDir, 'store', 'conversions');
  const bases = new Set<string>();
  for (const entry of await readdir(dir)) {
    const base = /^([0-9a-f]+)\.[ab]\.json$/.exec(entry)?.[1];
    if (base !== undefined && (await stat(join(dir, entry))).size > 0) bases.add(base);
  }
  return [...bases].map((base) => join(dir, base));
}
