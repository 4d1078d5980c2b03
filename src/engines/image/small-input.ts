import { readKnownSize } from '../../inputs/read-known-size.ts';
import type { EngineJob } from '../types.ts';
import { BYTES_SOURCES } from './formats.ts';

/** Inputs up to this size that sharp reads from bytes it is given are read whole first (smallInputBytes). */
const READ_WHOLE_BYTES = 1024 * 1024;

/**
 * The stored input's bytes, read in one go, where the submission told its size (inputFacts) and
 * it is small: given a path, libvips opens the file once for every loader it asks whether the
 * file is its kind before it finds the right one, and reads it in small pieces; given bytes, it
 * asks them in memory (a 185 KiB photo PNG -> WebP in the daemon: 480 system calls per
 * conversion from its path, 356 from its bytes, `read` 94 -> 14, `lseek` 26 -> 0). Undefined where it is not worth it or
 * cannot be read (sharp then reads the path, and says what is wrong with it).
 */
export async function smallInputBytes(job: EngineJob): Promise<Buffer | undefined> {
  const facts = job.inputFacts;
  if (!facts || facts.path !== job.inputPath || facts.size > READ_WHOLE_BYTES || !BYTES_SOURCES.includes(job.source)) return undefined;
  return readKnownSize(job.inputPath, facts.size).catch(() => undefined);
}
