import { createRequire } from 'node:module';

/**
 * sharp, loaded through its CommonJS build. Its ESM build pulls the same files (and semver's
 * fifty) through Node's ESM-to-CommonJS translator, which measured about 30 ms slower to load:
 * a tenth of a small `conv convert` batch. The types are the ESM build's; both export the same
 * function.
 */
const sharp = createRequire(import.meta.url)('sharp') as typeof import('sharp').default;

/**
 * sharp's own settings stand, measured with the memory-soak bench (trials of 63 images up to
 * 6000x4000 on 2 cores): the memory that stays after large images is the allocator's (glibc's malloc keeps it,
 * jemalloc gives it back: deploy/convd.service), not sharp's. Emptying the operation cache changed
 * nothing (768 MB 60 s after on glibc's malloc against 764 MB with the default 50 MB cache);
 * pinning one libvips thread per image, as sharp picks itself on glibc's malloc, did not help
 * under jemalloc, where sharp picks one per core (129-191 MB after against 119-151 MB, peaks
 * 1,312-1,342 MB against 1,245-1,305 MB, three runs each).
 *
 * The limits of libvips' operation cache (MB, open files, operations), sharp's defaults: what
 * the memory-soak bench allows above twice the idle RSS.
 */
export const SHARP_CACHE = (({ memory, files, items }) => ({ memory: memory.max, files: files.max, items: items.max }))(sharp.cache());

export default sharp;
