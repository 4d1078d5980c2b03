import { readFileSync } from 'node:fs';

/**
 * The malloc this process runs on, from the libraries mapped into it (/proc/self/maps): `jemalloc`
 * when libjemalloc is loaded (LD_PRELOAD, as deploy/convd.service sets it), `glibc` on glibc's own
 * malloc, `musl`, or `unknown` (no /proc). On glibc the memory libvips frees after large images
 * stays in the process (a fragmented heap): see docs/operations.md, "Memory".
 */
export type Allocator = 'jemalloc' | 'glibc' | 'musl' | 'unknown';

export function memoryAllocator(maps?: string): Allocator {
  let text = maps;
  if (text === undefined) {
    try {
      text = readFileSync('/proc/self/maps', 'utf8');
    } catch {
      return 'unknown';
    }
  }
  if (/\/libjemalloc[^/\s]*\.so/.test(text)) return 'jemalloc';
  if (/\/ld-musl-|\/libc\.musl-/.test(text)) return 'musl';
  if (/\/libc\.so\.6$/m.test(text) || /\/libc-[\d.]+\.so$/m.test(text)) return 'glibc';
  return 'unknown';
}
