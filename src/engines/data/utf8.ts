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

/**
 * Reads a file in a single-byte encoding (Windows-1252, Latin-1): every byte is a character, so
 * nothing can be invalid. A UTF-8 BOM at the start is dropped as a BOM would be.
 */
export async function* readSingleByteChunks(chunks: AsyncIterable<Buffer>, encoding: 'windows-1252' | 'latin1'): AsyncGenerator<string> {
  let first = true;
  for await (const chunk of chunks) {
    let bytes: Buffer = chunk;
    if (first && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) bytes = bytes.subarray(3);
    first = false;
    const text = encoding === 'latin1' ? bytes.toString('latin1') : windows1252(bytes);
    if (text) yield text;
  }
}

/** Windows-1252's characters for bytes 0x80-0x9f (five it leaves undefined keep their code). */
const WINDOWS_1252_HIGH = [
  0x20ac, 0x81, 0x201a, 0x192, 0x201e, 0x2026, 0x2020, 0x2021, 0x2c6, 0x2030, 0x160, 0x2039, 0x152, 0x8d, 0x17d, 0x8f,
  0x90, 0x2018, 0x2019, 0x201c, 0x201d, 0x2022, 0x2013, 0x2014, 0x2dc, 0x2122, 0x161, 0x203a, 0x153, 0x9d, 0x17e, 0x178,
].map((code) => String.fromCharCode(code));

/**
 * Bytes in Windows-1252: Latin-1, with Windows' quotes, dashes and euro sign in 0x80-0x9f. Not
 * TextDecoder: Node 20.20's reads them as Latin-1's control characters when it decodes a whole
 * buffer at once (its streaming decode is right), which a text's curly quotes would show.
 */
export function windows1252(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1').replace(/[\x80-\x9f]/g, (c) => WINDOWS_1252_HIGH[c.charCodeAt(0) - 0x80]!);
}

/** The encodings a plain text file is read in: UTF-8, else Windows-1252 (textEncodingOf). */
export type PlainTextEncoding = 'utf-8' | 'windows-1252';

/**
 * How a plain text file is read: UTF-8 where the whole file is valid UTF-8 (most are), else
 * Windows-1252, the encoding of most older Western text (Latin-1's letters, Windows' quotes and
 * dashes; a README of Debian's ed is one). Other single-byte encodings come out as Western
 * letters in their place; a file with NUL bytes is refused by decodeTextChunks and decodeText.
 */
export async function textEncodingOf(path: string): Promise<PlainTextEncoding> {
  // Read in chunks, nothing kept.
  const decoder = new TextDecoder('utf-8', { fatal: true });
  try {
    for await (const chunk of createReadStream(path) as AsyncIterable<Buffer>) decoder.decode(chunk, { stream: true });
    decoder.decode();
    return 'utf-8';
  } catch {
    return 'windows-1252';
  }
}

/** A plain text file read as text, in chunks, in its encoding (textEncodingOf). */
export async function* readTextFile(path: string, what: string): AsyncGenerator<string> {
  const encoding = await textEncodingOf(path);
  yield* decodeTextChunks(createReadStream(path), encoding, what);
}

/** A plain text file's chunks as text in its encoding (textEncodingOf). */
export async function* decodeTextChunks(chunks: AsyncIterable<Buffer>, encoding: PlainTextEncoding, what: string): AsyncGenerator<string> {
  if (encoding === 'utf-8') {
    yield* readUtf8Chunks(chunks, what);
    return;
  }
  yield* readSingleByteChunks(withoutNul(chunks, what), encoding);
}

/** A whole plain text file's bytes as text: UTF-8 where valid, else Windows-1252 (textEncodingOf). */
export function decodeText(bytes: Uint8Array, what: string): string {
  try {
    return strict.decode(bytes);
  } catch {
    if (bytes.includes(0)) throw notText(what);
    return windows1252(bytes);
  }
}

async function* withoutNul(chunks: AsyncIterable<Buffer>, what: string): AsyncGenerator<Buffer> {
  for await (const chunk of chunks) {
    if (chunk.includes(0)) throw notText(what);
    yield chunk;
  }
}

/** Text that is not UTF-8 and has NUL bytes: binary data, or UTF-16, which is not read here. */
function notText(what: string): ConversionFailure {
  return new ConversionFailure('input_invalid', `The ${what} is not text: it is not UTF-8 and has NUL bytes (binary data, or UTF-16 text: save it as UTF-8).`);
}
