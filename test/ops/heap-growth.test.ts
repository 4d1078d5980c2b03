/**
 * The daemon's heap growth (daemon/ops/heap-growth.ts) against V8's real collections: the small
 * heap's factor is set at once; a full collection that leaves more alive than the ceiling hands
 * the factor back to V8 (0), and one that leaves little again sets it back; the flag it sets is
 * one this Node's V8 knows (V8 complains of an unknown one on stderr and goes on). Full
 * collections are asked of V8 (test/helpers/full-gc.ts).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { steadyHeapGrowth } from '../../daemon/ops/heap-growth.ts';
import { fullCollection as collect } from '../helpers/full-gc.ts';

/** gc entries reach the observer on a later turn of the event loop. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 50));

describe('heap growth', () => {
  it("sets a small heap's factor, gives it back to V8 above the ceiling and takes it again below", async () => {
    const set: string[] = [];
    const stop = steadyHeapGrowth({ smallHeapBytes: 64 * 1024 * 1024, setFlags: (flags) => set.push(flags) });
    try {
      assert.deepEqual(set, ['--heap-growing-percent=300']);
      collect();
      await settle();
      assert.deepEqual(set, ['--heap-growing-percent=300'], 'a small heap after a full collection: unchanged');

      // About 100 MiB alive through a full collection (arrays of small integers: on V8's heap,
      // where strings made by padding or repeating would share one buffer).
      let alive: number[][] | null = Array.from({ length: 100 }, (_, i) => Array.from({ length: 131_072 }, (_, k) => k + i));
      collect();
      await settle();
      assert.equal(set.at(-1), '--heap-growing-percent=0', `${alive.length} MiB alive: V8's own factor`);

      alive = null;
      collect();
      await settle();
      assert.deepEqual(set, ['--heap-growing-percent=300', '--heap-growing-percent=0', '--heap-growing-percent=300']);
    } finally {
      stop();
    }
  });

  it("sets a flag this Node's V8 knows (an unknown one is only complained of on stderr)", () => {
    const module = fileURLToPath(new URL('../../daemon/ops/heap-growth.ts', import.meta.url));
    const run = (code: string) => spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { encoding: 'utf8', timeout: 30_000 });
    const ours = run(`import { steadyHeapGrowth } from ${JSON.stringify(module)}; steadyHeapGrowth()();`);
    assert.equal(ours.status, 0, ours.stderr);
    assert.equal(ours.stderr, '');
    // What the check above would see of a flag V8 does not know.
    const unknown = run(`import { setFlagsFromString } from 'node:v8'; setFlagsFromString('--no-such-heap-flag=1');`);
    assert.match(unknown.stderr, /unrecognized flag/);
  });
});
