import { createReadStream } from 'node:fs';
import { ConversionFailure } from '../../errors/api-error.ts';

const strict = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/**
 * Decodes text files strictly: bytes that are not UTF-8 fail with input_invalid naming the line,
 * instead of turning into U+FFFD replacement characters in the output. A BOM is dropped.
 */
export function decodeUtf8(bytes: Uint8Array, what: string): string {
  try {
    return strict.decode(bytes);
  } catch {
    const offset = firstInvalidOffset(bytes);
    const line = lineAtOffset(bytes, offset);
    throw new ConversionFailure('input_invalid', `The ${what} is not valid UTF-8 text: line ${line} (byte ${offset + 1}) has an invalid byte sequence.`);
  }
}

/** 1-based line number of a byte offset (counting \n). */
export function lineAtOffset(bytes: Uint8Array, offset: number): number {
  let line = 1;
  const end = Math.min(offset, bytes.length);
  for (let i = 0; i < end; i++) if (bytes[i] === 10) line++;
  return line;
}

/** 1-based line and column of a character offset in a string. */
export function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  const end = Math.min(offset, text.length);
  for (let i = 0; i < end; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: end - lineStart + 1 };
}

/** Offset of the first byte that does not start or continue a valid UTF-8 sequence. */
function firstInvalidOffset(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i]!;
    const length = b < 0x80 ? 1 : b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
    if (length === 0) return i;
    if (length > 1) {
      // The decoder already rejected the text: the chunk is valid only if every byte fits and it decodes.
      const chunk = bytes.subarray(i, i + length);
      if (chunk.length < length) return i;
      try {
        strict.decode(chunk);
      } catch {
        return i;
      }
    }
    i += length;
  }
  return bytes.length;
}

/**
 * Reads a file as UTF-8 text in chunks, strictly: an invalid byte sequence fails with
 * input_invalid naming the line, as decodeUtf8 does for whole files. A leading BOM is dropped.
 */
export async function* readUtf8Chunks(chunks: AsyncIterable<Buffer>, what: string): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });
  let line = 1;
  for await (const chunk of chunks) {
    let text: string;
    try {
      text = decoder.decode(chunk, { stream: true });
    } catch {
      // The bad sequence is in this chunk (or starts at the end of the previous one).
      const offset = firstInvalidOffset(chunk);
      throw new ConversionFailure('input_invalid', `The ${what} is not valid UTF-8 text: line ${line + lineAtOffset(chunk, offset) - 1} has an invalid byte sequence.`);
    }
    for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) line++;
    if (text) yield text;
  }
  try {
    const rest = decoder.decode();
    if (rest) yield rest;
  } catch {
    throw new ConversionFailure('input_invalid', `The ${what} is not valid UTF-8 text: it ends inside a multi-byte character (line ${line}).`);
  }
}

/** Whether a file is valid UTF-8 throughout (read in chunks, nothing kept). */
export async function isUtf8File(path: string): Promise<boolean> {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  try {
    for await (const chunk of createReadStream(path) as AsyncIterable<Buffer>) decoder.decode(chunk, { stream: true });
    decoder.decode();
    return true;
  } catch {
    return false;
  }
}

/**
 * Reads a file in a single-byte encoding (Windows-1252, Latin-1): every byte is a character, so
 * nothing can be invalid. A UTF-8 BOM at the start is dropped as a BOM would be.
 */
export async function* readSingleByteChunks(chunks: AsyncIterable<Buffer>, encoding: 'windows-1252' | 'latin1'): AsyncGenerator<string> {
  const decoder = new TextDecoder(encoding);
  let first = true;
  for await (const chunk of chunks) {
    let bytes: Buffer = chunk;
    if (first && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) bytes = bytes.subarray(3);
    first = false;
    const text = decoder.decode(bytes, { stream: true });
    if (text) yield text;
  }
  const rest = decoder.decode();
  if (rest) yield rest;
}
