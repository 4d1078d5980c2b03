/**
 * Where an image's dimensions are looked for: a JPEG's frame header may follow tens of KiB of
 * EXIF. An upload keeps this much of its head (sniff.ts HEAD_BYTES), so the pixels read from it
 * at submission are those the heavy-image check would read from the file.
 */
export const IMAGE_HEADER_BYTES = 64 * 1024;

/**
 * The pixels an image's header gives (width x height) where the format puts them near the start:
 * PNG (IHDR right after the signature), GIF (the logical screen), JPEG (the first start-of-frame
 * marker, which may follow tens of KiB of EXIF). Null for anything else, or a header not within
 * `head`. Read from an upload's first bytes at submission (the heavy-image check then needs no
 * file) or from the file's head at the run.
 */
export function headerPixels(head: Buffer): number | null {
  if (head.length >= 24 && head.readUInt32BE(0) === 0x89504e47) return head.readUInt32BE(16) * head.readUInt32BE(20);
  if (head.length >= 10 && head.toString('latin1', 0, 3) === 'GIF') return head.readUInt16LE(6) * head.readUInt16LE(8);
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
