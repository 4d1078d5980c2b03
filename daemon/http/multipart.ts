import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import busboy from 'busboy';
import { ApiError } from '../../src/errors/api-error.ts';
import { HEAD_BYTES } from '../../src/inputs/sniff.ts';
import { fieldError, MAX_MERGE_INPUTS } from '../../src/service/create-request.ts';
import type { SpooledFile } from '../../src/service/spooled-file.ts';
import { SpoolWriter } from './spool-writer.ts';

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
 * Streams a multipart body to spool files (never the whole body in memory: a file is held only up
 * to HEAD_BYTES, see SpooledFile.inMemory), hashing each file on the way for the idempotency
 * fingerprint when asked to. Crossing the size limit stops at
 * once with 413, `onFileBytes` refusing a chunk or `signal` aborting with their error; every way
 * of stopping removes what was written.
 */
export function parseMultipart(req: IncomingMessage, limits: MultipartLimits): Promise<MultipartBody> {
  return new Promise((resolve, reject) => {
    const fields: Record<string, string> = {};
    const files: SpooledFile[] = [];
    let parts = 0;
    let filesBytes = 0;
    const tooLarge = () => new ApiError('file_too_large', { details: { max_upload_mb: limits.maxFileMb }, params: { max_upload_mb: limits.maxFileMb } });
    const spooled: string[] = [];
    const writes: Promise<void>[] = [];
    // File parts still being written: a failure (an aborted request above all, which never ends
    // them) must end them, or their writes never settle and their spool files are never removed.
    // Destroyed with an error: a part that busboy already ended but that is not yet drained would
    // otherwise never tell its end, and its spool file would stay open (Node 20).
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
      // Files are listed in the order of their parts (a merge's order), not the order they end in.
      const place = parts++;
      streams.push(stream);
      const hash = limits.hashFiles ? createHash('sha256') : null;
      // The file's first bytes, kept as they pass: its content is sniffed from them, not read back.
      const head: Buffer[] = [];
      let headBytes = 0;
      let size = 0;
      const described = (inMemory: boolean): SpooledFile => ({
        path, size, sha256: hash?.digest('hex') ?? '', filename: info.filename ?? null, head: Buffer.concat(head, headBytes), ...(inMemory ? { inMemory } : {}),
      });
      /** Counts, checks, hashes and keeps the head of each chunk; the error that refuses it, if one does. */
      const take = (chunk: Buffer): ApiError | undefined => {
        // The files of a request together (a merge's) are what max_upload_mb allows: busboy
        // caps each alone, and a chunked body announces no length to refuse up front.
        filesBytes += chunk.length;
        const refused = filesBytes > limits.maxFileBytes ? tooLarge() : limits.onFileBytes?.(chunk.length);
        if (refused) return refused;
        size += chunk.length;
        hash?.update(chunk);
        if (headBytes < HEAD_BYTES) {
          head.push(Buffer.from(chunk.subarray(0, HEAD_BYTES - headBytes)));
          headBytes += head.at(-1)!.length;
        }
        return undefined;
      };
      stream.on('limit', () => {
        fail(tooLarge());
        stream.destroy();
      });

      /** The rest of a file larger than its head, written to its spool file after the chunks `held`. */
      const spoolRest = (held: Buffer[]): Promise<void> => {
        spooled.push(path);
        const spool = new SpoolWriter(path, { pause: () => stream.pause(), resume: () => stream.resume() });
        spool.push(Buffer.concat(held));
        return new Promise<void>((resolve) => {
          let settled = false;
          // The promise settles once the spool file is closed, whichever way the part ended.
          const settle = (outcome: 'whole' | 'broken'): void => {
            if (settled) return;
            settled = true;
            void spool.end(outcome === 'broken' || failure !== undefined).then(
              () => {
                if (outcome === 'whole' && !failure) files[place] = described(false);
              },
              () => {
                if (!failure) fail(new ApiError('validation_failed', { details: { body: 'the upload was interrupted' } }));
              },
            ).then(resolve);
          };
          // The listeners stay after the part has settled: an 'error' from its destruction must
          // still find one (an 'error' event with none would end the process).
          const onData = (chunk: Buffer): void => {
            if (settled) return;
            const refused = take(chunk);
            // Before the write: the chunk that would cross the limit or the disk floor is never written.
            if (refused) {
              fail(refused);
              settle('broken');
              return;
            }
            if (!spool.push(chunk)) settle('whole'); // a write failed: end() reports it
          };
          const onEnd = (): void => settle('whole');
          // Destroyed (a failure elsewhere, the size limit) or broken off: what was written goes.
          const onBroken = (): void => {
            if (settled) return; // 'close' after 'end', or the error of a destruction already told
            if (!failure) fail(new ApiError('validation_failed', { details: { body: 'the upload was interrupted' } }));
            settle('broken');
          };
          stream.on('data', onData).once('end', onEnd).on('error', onBroken).once('close', onBroken);
          if (!spool.pausing) stream.resume();
        });
      };

      // A file no larger than its head (a merge's one-page PDF, an icon) stays in memory: most are
      // never written at all (a merge packs them into its bundle as they are), and those that are
      // cost one write instead of a stream. A larger one is written to its spool file as it comes.
      writes.push(new Promise<void>((resolve) => {
        const held: Buffer[] = [];
        const onData = (chunk: Buffer): void => {
          const refused = take(chunk);
          if (refused) {
            fail(refused);
            return;
          }
          held.push(chunk);
          if (size <= HEAD_BYTES) return;
          // Paused before this handler returns: no chunk flows past until the spool file takes them.
          stream.pause();
          stream.off('data', onData).off('end', onEnd).off('error', onError);
          resolve(spoolRest(held));
        };
        const onEnd = (): void => {
          if (!failure) files[place] = described(true);
          resolve();
        };
        const onError = (): void => {
          if (!failure) fail(new ApiError('validation_failed', { details: { body: 'the upload was interrupted' } }));
          resolve();
        };
        stream.on('data', onData).once('end', onEnd).once('error', onError);
      }));
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
