import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { access, mkdir, open, readdir, readFile, rename, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { once } from 'node:events';
import { join } from 'node:path';
import type { Readable } from 'node:stream';

export type BlobKind = 'inputs' | 'results';

/** A local file for the length of one engine run; `release` removes it where it is a copy. */
export interface LocalFile {
  path: string;
  release(): Promise<void>;
}

/**
 * Where input and result files live: the local disk (LocalBlobStore) or an S3-compatible bucket
 * (S3BlobStore). Stored files are reached through streams and scoped local copies, never by a
 * path into the store; local paths exist only for scratch (spooled uploads, engine outputs).
 * File names are always conversion ids chosen by the service, never anything a client sent, so
 * no request can name a path or a key.
 */
export interface BlobStore {
  /** A fresh path for spooling an upload or a download before it belongs to a conversion. */
  spoolPath(): string;
  /** Moves a spooled file into place as the input of a conversion (the spooled file is gone after). */
  adoptInput(id: string, spooledPath: string): Promise<void>;
  /**
   * Stores bytes held in memory as the input of a conversion (a small upload that was never
   * spooled): written where the store keeps inputs, without a spool file moved into place.
   */
  adoptInputBytes(id: string, bytes: Uint8Array): Promise<void>;
  /** The input as a local file for an engine run. */
  localInput(id: string): Promise<LocalFile>;
  /** Where one engine run writes its output, before it is moved into place as the result. */
  outputPathFor(id: string, extension: string): string;
  /**
   * A new, empty directory (mode 0700) of one engine run, on the disk its outputs are adopted
   * from; the caller removes it. What is left of it when the process dies goes with clearScratch.
   */
  workDirFor(id: string): Promise<string>;
  /** Moves an engine's output into place as the conversion's result (the output file is gone after). */
  adoptResult(id: string, outputPath: string): Promise<void>;
  exists(kind: BlobKind, id: string): Promise<boolean>;
  size(kind: BlobKind, id: string): Promise<number | null>;
  /** A stream of the file (or of the inclusive byte range), once it is open; rejects when the file is not there. */
  openRead(kind: BlobKind, id: string, range?: { start: number; end: number }): Promise<Readable>;
  /**
   * The whole file in memory (for a small one: no stream to set up); rejects when the file is not
   * there. `size`: its size as the caller knows it (a result's, recorded with its success, is
   * fixed once written), so the disk store reads it in one call without asking for it.
   */
  readAll(kind: BlobKind, id: string, size?: number): Promise<Buffer>;
  /** The stored file's own path where it is on this machine's disk (the CLI moves rather than copies it); null in a bucket. */
  localPath(kind: BlobKind, id: string): string | null;
  delete(kind: BlobKind, id: string): Promise<void>;
  /** Removes what a run that did not succeed left of its output, if anything. */
  discardOutput(path: string): Promise<void>;
  discardSpool(path: string): Promise<void>;
  /** Ids that have files of the kind (for the orphan sweep). */
  list(kind: BlobKind): Promise<string[]>;
  /** The place answers (a bucket: for /readyz); absent where there is nothing to ask. */
  ping?(): Promise<void>;
  /** Removes leftovers of runs that died with the process (spool and work dirs). */
  clearScratch(): Promise<void>;
}

const SAFE_ID = /^[a-z0-9_]+$/i;
/**
 * What a streamed download reads at a time: 256 KiB, not the stream's default 64. Each read is a
 * hop to libuv's thread pool and back, and each chunk a write to the socket. A slow client holds
 * about two chunks (a result of at most 1 MiB is read whole: daemon/http/result-download.ts), so
 * a hundred of them hold 50-100 MB.
 */
const READ_CHUNK_BYTES = 256 * 1024;

export class LocalBlobStore implements BlobStore {
  private constructor(private readonly root: string) {}

  static async open(root: string): Promise<LocalBlobStore> {
    for (const dir of ['inputs', 'results', 'spool', 'work']) await mkdir(join(root, dir), { recursive: true, mode: 0o700 });
    return new LocalBlobStore(root);
  }

  private path(kind: BlobKind, id: string): string {
    if (!SAFE_ID.test(id)) throw new Error(`unsafe blob id ${JSON.stringify(id)}`);
    return join(this.root, kind, id);
  }

  spoolPath(): string {
    return join(this.root, 'spool', randomUUID());
  }

  async adoptInput(id: string, spooledPath: string): Promise<void> {
    await rename(spooledPath, this.path('inputs', id));
  }

  async adoptInputBytes(id: string, bytes: Uint8Array): Promise<void> {
    const path = this.path('inputs', id);
    try {
      // `wx`: an id is new; a file already there is never another conversion's to overwrite.
      await writeFile(path, bytes, { mode: 0o600, flag: 'wx' });
    } catch (error) {
      // Written in part (a full disk): no input is left that no conversion will own.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') await unlinkIfThere(path);
      throw error;
    }
  }

  async localInput(id: string): Promise<LocalFile> {
    const path = this.path('inputs', id);
    await access(path);
    return { path, release: async () => undefined };
  }

  async adoptResult(id: string, outputPath: string): Promise<void> {
    await rename(outputPath, this.path('results', id));
  }

  localPath(kind: BlobKind, id: string): string {
    return this.path(kind, id);
  }

  outputPathFor(id: string, extension: string): string {
    if (!SAFE_ID.test(id) || !/^[a-z0-9]+$/i.test(extension)) throw new Error(`unsafe output name ${id}.${extension}`);
    return join(this.root, 'work', `${id}-${randomUUID().slice(0, 8)}.${extension}`);
  }

  async workDirFor(id: string): Promise<string> {
    if (!SAFE_ID.test(id)) throw new Error(`unsafe blob id ${JSON.stringify(id)}`);
    const dir = join(this.root, 'work', `${id}-${randomUUID().slice(0, 8)}`);
    await mkdir(dir, { mode: 0o700 });
    return dir;
  }

  async exists(kind: BlobKind, id: string): Promise<boolean> {
    return (await this.size(kind, id)) !== null;
  }

  async size(kind: BlobKind, id: string): Promise<number | null> {
    const path = this.path(kind, id);
    try {
      return (await stat(path)).size;
    } catch {
      return null;
    }
  }

  async openRead(kind: BlobKind, id: string, range?: { start: number; end: number }): Promise<Readable> {
    const stream = createReadStream(this.path(kind, id), { ...range, highWaterMark: READ_CHUNK_BYTES });
    try {
      await once(stream, 'ready');
    } catch (error) {
      stream.destroy();
      throw error;
    }
    return stream;
  }

  async readAll(kind: BlobKind, id: string, size?: number): Promise<Buffer> {
    if (size === undefined) return readFile(this.path(kind, id));
    // open, one read, close: readFile would fstat for the size and read again to see the end.
    // (src/inputs/read-known-size.ts does the same for the engines; the store imports no layer above the model.)
    const handle = await open(this.path(kind, id), 'r');
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

  async delete(kind: BlobKind, id: string): Promise<void> {
    await unlinkIfThere(this.path(kind, id));
  }

  async discardOutput(path: string): Promise<void> {
    await unlinkIfThere(path);
  }

  async discardSpool(path: string): Promise<void> {
    await unlinkIfThere(path);
  }

  async list(kind: BlobKind): Promise<string[]> {
    return (await readdir(join(this.root, kind))).filter((name) => SAFE_ID.test(name));
  }

  async clearScratch(): Promise<void> {
    for (const dir of ['spool', 'work']) {
      await rm(join(this.root, dir), { recursive: true, force: true });
      await mkdir(join(this.root, dir), { recursive: true, mode: 0o700 });
    }
  }
}

/** One unlink, where `rm({force})` would lstat first: these run several times per conversion. */
async function unlinkIfThere(path: string): Promise<void> {
  try {
    await unlink(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}
