import { open } from 'node:fs/promises';
import { headerPixels, IMAGE_HEADER_BYTES } from '../../inputs/image-header.ts';
import type { EngineJob } from '../types.ts';

/** Past these an image's work leaves the daemon's own threads for an engine host. */
const HEAVY_BYTES = 1024 * 1024;
const HEAVY_PIXELS = 4_000_000;
/** Encoders that take seconds of every core even for a photo of ordinary size. */
const SLOW_TARGETS = new Set(['avif', 'heic', 'heif']);

/**
 * Whether an image conversion is heavy: sharp runs on libvips's threads inside whichever process
 * calls it, at that process's priority. Small images stay in the daemon (no hand-off, the fast
 * path of a thumbnail); a large one, or a slow encoder, runs in an engine host, niced below the
 * daemon like every other engine's work, so that a tenant's huge AVIF cannot take the CPU from
 * the daemon or from others' small conversions. The pixels come from the PNG, GIF or JPEG header
 * where it is at hand (a small file can hold a huge image); other formats go by size alone.
 */
export async function isHeavyImage(job: Pick<EngineJob, 'inputPath' | 'target' | 'inputFacts' | 'inputBytes'>): Promise<boolean> {
  if (SLOW_TARGETS.has(job.target)) return true;
  // What the submission read of this very file (no open, read and close of it again), or the
  // bytes themselves where they came with the job (there is no file).
  const facts = job.inputFacts?.path === job.inputPath ? job.inputFacts
    : job.inputBytes ? { size: job.inputBytes.length, pixels: headerPixels(job.inputBytes.subarray(0, IMAGE_HEADER_BYTES)) } : undefined;
  if (facts) return facts.size >= HEAVY_BYTES || (facts.pixels !== null && facts.pixels >= HEAVY_PIXELS);
  const file = await open(job.inputPath, 'r');
  try {
    const head = Buffer.allocUnsafe(IMAGE_HEADER_BYTES);
    const { bytesRead } = await file.read(head, 0, head.length, 0);
    // A file that ended within the head is small; only a longer one is measured.
    if (bytesRead === head.length && (await file.stat()).size >= HEAVY_BYTES) return true;
    const pixels = headerPixels(head.subarray(0, bytesRead));
    return pixels !== null && pixels >= HEAVY_PIXELS;
  } finally {
    await file.close();
  }
}
