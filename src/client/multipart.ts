import { createReadStream } from 'node:fs';
import type { Readable } from 'node:stream';
import type { FileLike, FormDataEntryValue, FormDataLike } from 'form-data-encoder';

/**
 * The minimal FormData and File shapes that `form-data-encoder` (which got 14 uses for any
 * spec-compliant FormData body) encodes. Node's own FormData copies a File's parts and cannot
 * hold a stream, so these adapters let the encoder pull the file from disk or from a pipe
 * chunk by chunk, at the moment the request body is written: the upload is never in memory.
 */
export class StreamedFile implements FileLike {
  readonly [Symbol.toStringTag] = 'File';
  readonly lastModified = Date.now();

  /**
   * `size` NaN means unknown (a pipe): the encoder then omits Content-Length and the request goes
   * out chunked. `open` is called once per encoding, so a file-backed part can be re-sent on a
   * retry by encoding a new form.
   */
  constructor(
    readonly name: string,
    readonly size: number,
    private readonly open: () => Readable,
    readonly type: string = 'application/octet-stream',
  ) {}

  stream(): Readable {
    return this.open();
  }

  static fromPath(path: string, name: string, size: number): StreamedFile {
    return new StreamedFile(name, size, () => createReadStream(path));
  }
}

/** Ordered name/value pairs, enough for `form-data-encoder` (it only reads `entries()`). */
export class MultipartForm implements FormDataLike {
  readonly [Symbol.toStringTag] = 'FormData';
  private readonly fields: [string, FormDataEntryValue][] = [];

  append(name: string, value: unknown, _fileName?: string): void {
    this.fields.push([name, value instanceof StreamedFile ? value : String(value)]);
  }

  getAll(name: string): FormDataEntryValue[] {
    return this.fields.filter(([key]) => key === name).map(([, value]) => value);
  }

  entries(): IterableIterator<[string, FormDataEntryValue]> {
    return this.fields[Symbol.iterator]();
  }

  [Symbol.iterator](): IterableIterator<[string, FormDataEntryValue]> {
    return this.entries();
  }
}
