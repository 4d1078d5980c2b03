/**
 * The allocator the daemon names in its `started` line and `convd doctor`:
 * told from the libraries mapped into the process.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { memoryAllocator } from '../../daemon/ops/allocator.ts';

const line = (path: string) => `7f1c2a000000-7f1c2a028000 r--p 00000000 fe:01 1234   ${path}`;

describe('memoryAllocator', () => {
  it('tells jemalloc, preloaded, from glibc under it', () => {
    const maps = [line('/usr/bin/node'), line('/usr/lib/x86_64-linux-gnu/libjemalloc.so.2'), line('/usr/lib/x86_64-linux-gnu/libc.so.6')].join('\n');
    assert.equal(memoryAllocator(maps), 'jemalloc');
  });

  it('tells glibc and musl', () => {
    assert.equal(memoryAllocator([line('/usr/bin/node'), line('/usr/lib/x86_64-linux-gnu/libc.so.6')].join('\n')), 'glibc');
    assert.equal(memoryAllocator([line('/usr/bin/node'), line('/lib/ld-musl-x86_64.so.1')].join('\n')), 'musl');
    assert.equal(memoryAllocator(line('/usr/bin/node')), 'unknown');
  });

  it('reads this process without arguments', () => {
    const expected = process.env.LD_PRELOAD?.includes('jemalloc') ? 'jemalloc' : 'glibc';
    if (process.platform === 'linux' && process.report?.getReport && (process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header?.glibcVersionRuntime) {
      assert.equal(memoryAllocator(), expected);
    } else {
      assert.ok(['jemalloc', 'glibc', 'musl', 'unknown'].includes(memoryAllocator()));
    }
  });
});
