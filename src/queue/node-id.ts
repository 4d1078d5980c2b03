import { randomUUID } from 'node:crypto';
import { open, readFile, rename } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { fsyncDirectory } from '../store/durable-json-file.ts';

/** The file in a node's data dir that holds its id. */
export const NODE_ID_FILE = 'node-id';

/** What an id read back must look like; anything else (a torn or edited file) is replaced. */
const NODE_ID = /^[A-Za-z0-9._:-]{1,200}$/;

/**
 * The id a node of a cluster claims conversions and webhook deliveries under, kept in its data
 * dir: a node restarted on the same data dir is the same node, so it knows the leases it held
 * when it went down as its own and takes them back at once (a new id would leave them to run out
 * first). Made at the first start from the host name and a random part (two nodes on one host
 * have two data dirs, hence two ids); the data dir's lock keeps two processes off one dir.
 */
export async function nodeIdIn(dataDir: string): Promise<string> {
  const path = join(dataDir, NODE_ID_FILE);
  const found = await readFile(path, 'utf8').then((text) => text.trim(), (error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return '';
    throw error;
  });
  if (NODE_ID.test(found)) return found;
  const id = `${hostname().replace(/[^A-Za-z0-9.-]/g, '-').slice(0, 100) || 'node'}:${randomUUID().slice(0, 8)}`;
  // Whole or not at all: written aside, synced, renamed into place, and the rename synced.
  const temporary = `${path}.${process.pid}.tmp`;
  const handle = await open(temporary, 'w', 0o600);
  try {
    await handle.writeFile(`${id}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temporary, path);
  await fsyncDirectory(dataDir);
  return id;
}
