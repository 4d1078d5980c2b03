import { open } from 'node:fs/promises';
import type { EngineJob } from '../types.ts';

/** Past these an image's work leaves the daemon's own threads for an engine host. */
const HEAVY_BYTES = 1024 * 1024;
const HEAVY_PIXELS = 4_000_000;
/** Where the dimensions are looked for: a JPEG's frame header may follow tens of KiB of EXIF. */
const HEAD_BYTES = 64 * 1024;
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
export async function isHeavyImage(job: Pick<EngineJob, 'inputPath' | 'target'>): Promise<boolean> {
  if (SLOW_TARGETS.has(job.target)) return true;
  const file = await open(job.inputPath, 'r');
  try {
    const head = Buffer.allocUnsafe(HEAD_BYTES);
    const { bytesRead } = await file.read(head, 0, head.length, 0);
    // A file that ended within the head is small; only a longer one is measured.
    if (bytesRead === head.length && (await file.stat()).size >= HEAVY_BYTES) return true;
    const pixels = headerPixels(head.subarray(0, bytesRead));
    return pixels !== null && pixels >= HEAVY_PIXELS;
  } finally {
    await file.close();
  }
}

function headerPixels(head: Buffer): number | null {
  // PNG: IHDR right after the signature.
  if (head.length >= 24 && head.readUInt32BE(0) === 0x89504e47) return head.readUInt32BE(16) * head.readUInt32BE(20);
  // GIF: the logical screen.
  if (head.length >= 10 && head.toString('latin1', 0, 3) === 'GIF') return head.readUInt16LE(6) * head.readUInt16LE(8);
  // JPEG: the first start-of-frame marker.
  if (head.length >= 4 && head[0] === 0xff && head[1] === 0xd8) {
    for (let at = 2; at + 9 < head.length;) {
      if (head[at] !== 0xff) return null;
      const marker = head[at + 1]!;
      const length = head.readUInt16BE(at + 2);
      if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
        return head.readUInt16BE(at + 5) * head.readUInt16BE(at + 7);
      }
      at += 2 + length;
    }
  }
  return null;
}
