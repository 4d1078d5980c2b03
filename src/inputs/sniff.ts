import { open } from 'node:fs/promises';

/**
 * Guesses a file's format from its content: magic numbers through file-type, plus SVG, which is
 * text and has none. Returns a file extension (`png`, `mp4`, `svg`), or undefined.
 */
export async function sniffFormat(path: string): Promise<string | undefined> {
  // Imported here: file-type is needed only for uploads whose name says nothing.
  const { fileTypeFromFile } = await import('file-type');
  const detected = await fileTypeFromFile(path).catch(() => undefined);
  // file-type calls any XML document `xml`, an SVG that opens with `<?xml ...?>` too: look closer.
  if (detected && detected.ext !== 'xml') return detected.ext;
  const handle = await open(path, 'r');
  try {
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(2048), 0, 2048, 0);
    const head = buffer.subarray(0, bytesRead).toString('utf8');
    if (/^\s*(<\?xml[^>]*>\s*)?(<!--[\s\S]*?-->\s*)*(<!DOCTYPE svg[^>]*>\s*)?<svg[\s>]/i.test(head)) return 'svg';
  } finally {
    await handle.close();
  }
  return detected?.ext;
}
