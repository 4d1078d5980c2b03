/**
 * A node's id is kept in its data dir (src/queue/node-id.ts): the same dir gives the same id at
 * every start, another dir another id, and a file that holds no id (torn, emptied) is replaced.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { NODE_ID_FILE, nodeIdIn } from '../../src/queue/node-id.ts';

describe('node id', () => {
  let root: string;
  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'convd-node-id-'));
  });
  after(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('the same in one data dir at every start, another in another, kept in a file of its own', async () => {
    const [one, two] = [join(root, 'one'), join(root, 'two')];
    await Promise.all([one, two].map((dir) => mkdir(dir)));
    const id = await nodeIdIn(one);
    assert.match(id, /^[A-Za-z0-9.-]+:[0-9a-f]{8}$/);
    assert.equal(await nodeIdIn(one), id);
    assert.equal((await readFile(join(one, NODE_ID_FILE), 'utf8')).trim(), id);
    assert.equal((await stat(join(one, NODE_ID_FILE))).mode & 0o777, 0o600);
    assert.notEqual(await nodeIdIn(two), id);
  });

  it('a file that holds no id is replaced by a new one', async () => {
    const dir = join(root, 'torn');
    await mkdir(dir);
    await writeFile(join(dir, NODE_ID_FILE), '');
    const id = await nodeIdIn(dir);
    assert.match(id, /:[0-9a-f]{8}$/);
    assert.equal(await nodeIdIn(dir), id);
  });
});
