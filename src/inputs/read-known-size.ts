import { open } from 'node:fs/promises';

/**
 * A file of a size known beforehand (a stored input's, recorded at its submission), in one read:
 * open, read, close, where readFile asks for the size and reads once more to find the end. Fewer
 * bytes than told where the file is shorter.
 */
export async function readKnownSize(path: string, size: number): Promise<Buffer> {
  const handle = await open(path, 'r');
  try {
    const bytes = Buffer.allocUnsafe(size);
    let filled = 0;
    while (filled < size) {
      const { bytesRead } = await handle.read(bytes, filled, size - filled, filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    return filled === size ? bytes : bytes.subarray(0, filled);
  } finally {
    await handle.close();
  }
}
