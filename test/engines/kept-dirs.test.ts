/** KeptDirs: a directory is kept only when given back clean, within its number, not after close, and not once stale. */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { KeptDirs } from '../../src/engines/process/kept-dirs.ts';

describe('kept directories', () => {
  let root: string;
  let clock = 0;
  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'convd-kept-'));
  });
  after(async () => {
    await rm(root, { recursive: true, force: true });
  });
  const keeper = (keep = 2) => new KeptDirs(() => mkdtemp(join(root, 'd-')), keep, () => clock);

  it('hands a clean directory out again; removes one given back unclean, or without a clear', async () => {
    const dirs = keeper();
    const first = await dirs.take();
    await dirs.give(first, async () => true);
    assert.equal(await dirs.take(), first, 'reused');
    await writeFile(join(first, 'left.tmp'), 'x');
    await dirs.give(first, async () => false);
    assert.equal(existsSync(first), false);
    const second = await dirs.take();
    assert.notEqual(second, first);
    await dirs.give(second);
    assert.equal(existsSync(second), false, 'a failed run gives no clear: removed whole');
  });

  it('keeps no more than its number', async () => {
    const dirs = keeper(1);
    const [a, b] = [await dirs.take(), await dirs.take()];
    await dirs.give(a, async () => true);
    await dirs.give(b, async () => true);
    assert.equal(existsSync(a), true);
    assert.equal(existsSync(b), false);
    await dirs.close();
  });

  it('removes a directory whose clear was under way when it closed, and those kept', async () => {
    const dirs = keeper();
    const [kept, late] = [await dirs.take(), await dirs.take()];
    await dirs.give(kept, async () => true);
    let finish = () => undefined as void;
    const giving = dirs.give(late, () => new Promise<boolean>((resolve) => (finish = () => resolve(true))));
    await dirs.close();
    finish();
    await giving;
    assert.equal(existsSync(kept), false);
    assert.equal(existsSync(late), false, 'not kept after close');
  });

  it('hands out no directory idle for more than an hour (a temp cleaner may have emptied it)', async () => {
    const dirs = keeper();
    const old = await dirs.take();
    await dirs.give(old, async () => true);
    clock += 61 * 60_000;
    const fresh = await dirs.take();
    assert.notEqual(fresh, old);
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(existsSync(old), false, 'the stale one removed');
    await dirs.give(fresh);
  });
});
