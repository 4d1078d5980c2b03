import { randomUUID } from 'node:crypto';
import { createReadStream, type ReadStream } from 'node:fs';
import { mkdir, readdir, rename, rm, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';

export type BlobKind = 'inputs' | 'results';

/**
 * Where input and result files live. Local disk today; the seam for an S3-compatible store later
 * (engines would then work on a local copy). File names are always conversion ids chosen by the
 * service, never anything a client sent, so no request can name a path.
 */
export interface BlobStore {
  /** A fresh path for spooling an upload or a download before it belongs to a conversion. */
  spoolPath(): string;
  /** Moves a spooled file into place as the input of a conversion. */
  adoptInput(id: string, spooledPath: string): Promise<void>;
  inputPath(id: string): string;
  resultPath(id: string): string;
  /** Where one engine run writes its output, before it is moved into place as the result. */
  outputPathFor(id: string, extension: string): string;
  exists(kind: BlobKind, id: string): Promise<boolean>;
  size(kind: BlobKind, id: string): Promise<number | null>;
  openRead(kind: BlobKind, id: string, range?: { start: number; end: number }): ReadStream;
  delete(kind: BlobKind, id: string): Promise<void>;
  /** Removes what a run that did not succeed left of its output, if anything. */
  discardOutput(path: string): Promise<void>;
  discardSpool(path: string): Promise<void>;
  /** Ids that have files of the kind (for the orphan sweep). */
  list(kind: BlobKind): Promise<string[]>;
  /** Removes leftovers of runs that died with the process (spool and work dirs). */
  clearScratch(): Promise<void>;
}

const SAFE_ID = /^[a-z0-9_]+$/i;

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

  inputPath(id: string): string {
    return this.path('inputs', id);
  }

  resultPath(id: string): string {
    return this.path('results', id);
  }

  outputPathFor(id: string, extension: string): string {
    if (!SAFE_ID.test(id) || !/^[a-z0-9]+$/i.test(extension)) throw new Error(`unsafe output name ${id}.${extension}`);
    return join(this.root, 'work', `${id}-${randomUUID().slice(0, 8)}.${extension}`);
  }

  async exists(kind: BlobKind, id: string): Promise<boolean> {
    return (await this.size(kind, id)) !== null;
  }

  async size(kind: BlobKind, id: string): Promise<number | null> {
    try {
      return (await stat(this.path(kind, id))).size;
    } catch {
      return null;
    }
  }

  openRead(kind: BlobKind, id: string, range?: { start: number; end: number }): ReadStream {
    return createReadStream(this.path(kind, id), range);
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
