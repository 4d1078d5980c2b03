/**
 * DirectorySync against a real directory: calls made while a sync runs share the next one (one
 * fsync for many new names), no call is answered by a sync that started before it, a failed sync
 * fails its callers and the next call opens the directory anew, and close() waits for what was
 * asked. The fsyncs are counted on FileHandle's own `sync`, the call that reaches the kernel.
 */
import assert from 'node:assert/strict';
import { mkdtemp, open, rm, writeFile, type FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { DirectorySync } from '../../src/store/directory-sync.ts';

type SyncFn = FileHandle['sync'];

describe('DirectorySync', () => {
  let dir: string;
  let proto: { sync: SyncFn };
  let realSync: SyncFn;
  /** Each fsync as it starts and ends, in order. */
  let events: string[];
  let fail: Error | null;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'convd-dirsync-'));
    const probe = await open(dir, 'r');
    proto = Object.getPrototypeOf(probe) as { sync: SyncFn };
    await probe.close();
    realSync = proto.sync;
    events = [];
    fail = null;
    let count = 0;
    proto.sync = async function (this: FileHandle) {
      const n = ++count;
      events.push(`start ${n}`);
      // Long enough that calls made meanwhile find it running.
      await new Promise((resolve) => setTimeout(resolve, 20));
      if (fail) {
        events.push(`fail ${n}`);
        throw fail;
      }
      await realSync.call(this);
      events.push(`end ${n}`);
    };
  });
  afterEach(async () => {
    proto.sync = realSync;
    await rm(dir, { recursive: true, force: true });
  });

  it('one fsync for the calls made while none runs, one more for all made while it runs', async () => {
    const sync = new DirectorySync(dir);
    const first = sync.sync();
    const during = Array.from({ length: 9 }, () => sync.sync());
    await Promise.all([first, ...during]);
    assert.deepEqual(events, ['start 1', 'end 1', 'start 2', 'end 2']);
    await sync.close();
  });

  it('answers a call only with a sync that started after it', async () => {
    const sync = new DirectorySync(dir);
    const order: string[] = [];
    const first = sync.sync().then(() => order.push(`first after ${events.at(-1)}`));
    await new Promise((resolve) => setTimeout(resolve, 5));
    // The first sync is running: a name made now may be missed by it.
    await writeFile(join(dir, 'new-name'), '');
    const second = sync.sync().then(() => order.push(`second after ${events.at(-1)}`));
    await Promise.all([first, second]);
    assert.deepEqual(order, ['first after end 1', 'second after end 2']);
    await sync.close();
  });

  it('a failed sync fails its callers; the next call opens the directory anew and succeeds', async () => {
    const sync = new DirectorySync(dir);
    const handles = new Set<unknown>();
    const counting = proto.sync;
    proto.sync = async function (this: FileHandle) {
      handles.add(this);
      return counting.call(this);
    };
    await sync.sync();
    assert.equal(handles.size, 1);
    fail = Object.assign(new Error('I/O error'), { code: 'EIO' });
    const outcomes = await Promise.allSettled([sync.sync(), sync.sync()]);
    assert.deepEqual(outcomes.map((outcome) => outcome.status), ['rejected', 'rejected'], 'the running sync and the one after it both failed');
    fail = null;
    await sync.sync();
    assert.equal(events.at(-1), `end ${events.filter((event) => event.startsWith('start')).length}`);
    assert.equal(handles.size, 3, 'each sync after a failure on a handle opened anew');
    await sync.close();
  });

  it('close() waits for the syncs asked for, and a sync after close opens the directory again', async () => {
    const sync = new DirectorySync(dir);
    const pending = [sync.sync(), sync.sync()];
    await sync.close();
    assert.deepEqual(events, ['start 1', 'end 1', 'start 2', 'end 2'], 'both ran before close returned');
    await Promise.all(pending);
    await sync.sync();
    assert.equal(events.at(-1), 'end 3');
    await sync.close();
  });
});
