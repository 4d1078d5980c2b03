import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import busboy from 'busboy';
import { ApiError } from '../../src/errors/api-error.ts';
import { HEAD_BYTES } from '../../src/inputs/sniff.ts';
import { fieldError, MAX_MERGE_INPUTS, type SpooledFile } from '../../src/service/create-request.ts';

export interface MultipartLimits {
  maxFileBytes: number;
  maxFileMb: number;
  spoolPath: () => string;
  discard: (path: string) => Promise<void>;
  /**
   * Hash each file (SHA-256) for the idempotency fingerprint. Only a request with an
   * Idempotency-Key is ever compared with another, so only such a request pays for it.
   */
  hashFiles: boolean;
  /** Told of each chunk of a file before it is written; an error it returns stops the upload with it. */
  onFileBytes?: ((bytes: number) => ApiError | undefined) | undefined;
  /** Aborted (with an ApiError as its reason) to stop reading: the body stalled or took too long. */
  signal?: AbortSignal | undefined;
}

export interface MultipartBody {
  fields: Record<string, string>;
  files: SpooledFile[];
}

const MAX_FIELD_BYTES = 64 * 1024;
const MAX_FIELDS = 200;
/** A merge's most files, and one more: that one is refused by the request's validation, naming the limit. */
const MAX_FILES = MAX_MERGE_INPUTS + 1;

/**
 * Streams a multipart body straight to spool files (never the whole body in memory), hashing each
 * file on the way for the idempotency fingerprint when asked to. Crossing the size limit stops at
 * once with 413, `onFileBytes` refusing a chunk or `signal` aborting with their error; every way
 * of stopping removes what was written.
 */
export function parseMultipart(req: IncomingMessage, limits: MultipartLimits): Promise<MultipartBody> {
  return new Promise((resolve, reject) => {
    const fields: Record<string, string> = {};
    const files: SpooledFile[] = [];
    let filesBytes = 0;
    const tooLarge = () => new ApiError('file_too_large', { details: { max_upload_mb: limits.maxFileMb }, params: { max_upload_mb: limits.maxFileMb } });
    const spooled: string[] = [];
    const writes: Promise<void>[] = [];
    // File parts still being written: a failure (an aborted request above all, which never ends
    // them) must end them, or their writes never settle and their spool files are never removed.
    // Destroyed with an error: a part that busboy already ended but that is not yet drained would
    // otherwise leave its pipeline() pending forever (Node 20).
    const streams: Readable[] = [];
    let failure: ApiError | undefined;
    let parser: busboy.Busboy;

    const fail = (error: ApiError) => {
      if (failure) return;
      failure = error;
      req.unpipe(parser);
      req.resume();
      for (const stream of streams) stream.destroy(error);
      void Promise.allSettled(writes).then(async () => {
        for (const path of spooled) await limits.discard(path);
        reject(error);
      });
    };

    try {
      parser = busboy({
        headers: req.headers,
        // busboy reports 'limit' when a file *reaches* fileSize; one byte more makes it fire only
        // for a file above the maximum, so a file of exactly max_upload_mb is accepted.
        limits: { fileSize: limits.maxFileBytes + 1, fieldSize: MAX_FIELD_BYTES, fields: MAX_FIELDS, files: MAX_FILES, parts: MAX_FIELDS + MAX_FILES },
        defParamCharset: 'utf8',
      });
    } catch {
      reject(new ApiError('validation_failed', { details: { body: 'malformed multipart/form-data (boundary missing)' }, params: { hint: ' The multipart body could not be read.' } }));
      return;
    }

    parser.on('field', (name, value, info) => {
      if (info.valueTruncated) fail(fieldError(name, 'value too long'));
      else fields[name] = value;
    });

    parser.on('file', (name, stream, info) => {
      if (name !== 'file') {
        stream.resume();
        fail(fieldError(name, 'files are accepted only in the field "file"'));
        return;
      }
      const path = limits.spoolPath();
      // Files are listed in the order of their parts (a merge's order), not the order their writes end in.
      const place = spooled.length;
      spooled.push(path);
      streams.push(stream);
      const hash = limits.hashFiles ? createHash('sha256') : null;
      // The file's first bytes, kept as they pass: its content is sniffed from them, not read back.
      const head: Buffer[] = [];
      let headBytes = 0;
      const { onFileBytes } = limits;
      const inspect = [new Transform({
        transform(chunk: Buffer, _encoding, callback) {
          // The files of a request together (a merge's) are what max_upload_mb allows: busboy
          // caps each alone, and a chunked body announces no length to refuse up front.
          filesBytes += chunk.length;
          const refused = filesBytes > limits.maxFileBytes ? tooLarge() : onFileBytes?.(chunk.length);
          // Before the write: the chunk that would cross the limit or the disk floor is never written.
          if (refused) {
            fail(refused);
            callback(refused);
            return;
          }
          hash?.update(chunk);
          if (headBytes < HEAD_BYTES) {
            head.push(Buffer.from(chunk.subarray(0, HEAD_BYTES - headBytes)));
            headBytes += head.at(-1)!.length;
          }
          callback(null, chunk);
        },
      })];
      stream.on('limit', () => {
        fail(tooLarge());
        stream.destroy();
      });
      const spool = createWriteStream(path, { mode: 0o600 });
      // A failed pipeline settles before the spool file's descriptor is closed, and a file
      // removed while still open keeps its blocks: the space must really be free once it is
      // discarded (the disk floor reads free space right after).
      const closed = new Promise<void>((resolve) => spool.once('close', () => resolve()));
      const written = pipeline([stream, ...inspect, spool])
        .then(() => {
          if (!failure) files[place] = { path, size: spool.bytesWritten, sha256: hash?.digest('hex') ?? '', filename: info.filename ?? null, head: Buffer.concat(head, headBytes) };
        })
        .catch(() => {
          if (!failure) fail(new ApiError('validation_failed', { details: { body: 'the upload was interrupted' } }));
        });
      writes.push(written.then(() => closed));
    });

    parser.on('filesLimit', () => fail(fieldError('file', `at most ${MAX_MERGE_INPUTS} files are merged in one request`)));
    parser.on('fieldsLimit', () => fail(new ApiError('validation_failed', { details: { body: 'too many fields' } })));
    parser.on('partsLimit', () => fail(new ApiError('validation_failed', { details: { body: 'too many parts' } })));
    parser.on('error', () => fail(new ApiError('validation_failed', { details: { body: 'malformed multipart/form-data' } })));
    parser.on('close', () => {
      void Promise.allSettled(writes).then(async () => {
        if (failure) return;
        resolve({ fields, files: files.filter((file) => file !== undefined) });
      });
    });
    req.on('aborted', () => fail(new ApiError('validation_failed', { details: { body: 'the upload was interrupted' } })));
    const { signal } = limits;
    const stopped = () => fail(signal?.reason instanceof ApiError ? signal.reason : new ApiError('internal_error'));
    if (signal?.aborted) {
      stopped();
      return;
    }
    signal?.addEventListener('abort', stopped, { once: true });
    req.pipe(parser);
  });
}
