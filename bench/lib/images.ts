import sharp from 'sharp';

/**
 * A photo-like PNG: a colour gradient with mild noise, different for each `seed`, so neither
 * the PNG decoder nor the encoder sees trivial (solid) content.
 */
export async function photoPng(width: number, height: number, seed: number): Promise<Buffer> {
  return sharp(photoRaw(width, height, seed), { raw: { width, height, channels: 3 } }).png().toBuffer();
}

/** The same picture as a JPEG (quality 90: a camera's file, noise kept). */
export async function photoJpeg(width: number, height: number, seed: number): Promise<Buffer> {
  return sharp(photoRaw(width, height, seed), { raw: { width, height, channels: 3 } }).jpeg({ quality: 90 }).toBuffer();
}

/** The pixels of photoPng, 8-bit RGB. */
function photoRaw(width: number, height: number, seed: number): Buffer {
  const raw = Buffer.alloc(width * height * 3);
  let state = (seed * 2654435761) >>> 0 || 1;
  const noise = () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return ((state >>> 0) % 24) - 12;
  };
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const at = (y * width + x) * 3;
      raw[at] = clamp((x * 255) / width + noise() + seed * 7);
      raw[at + 1] = clamp((y * 255) / height + noise() + seed * 13);
      raw[at + 2] = clamp(((x + y) * 128) / (width + height) + 64 + noise());
    }
  }
  return raw;
}

function clamp(value: number): number {
  return Math.max(0, Math.min(255, Math.round(value)));
}

/** A small PNG for requests whose conversion does not matter (submission latency). */
export function tinyPng(): Promise<Buffer> {
  return sharp({ create: { width: 32, height: 32, channels: 3, background: '#3366aa' } }).png().toBuffer();
}
