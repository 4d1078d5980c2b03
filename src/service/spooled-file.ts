import { writeFile } from 'node:fs/promises';
import type { BlobStore } from '../store/blob-store.ts';

/** An upload as the face that received it spooled it: on disk, or (a small one) still in memory. */
export interface SpooledFile {
  path: string;
  size: number;
  sha256: string;
  filename: string | null;
  /**
   * The first bytes (HEAD_BYTES, or all of a smaller file) as the face wrote them: the content is
   * sniffed from these without opening the file again. Unset: read from the file.
   */
  head?: Buffer;
  /**
   * Set when the whole file is `head` and nothing is at `path` yet: whoever needs the file on
   * disk asks spooledPath() for it (a merge's inputs go into its bundle from memory).
   */
  inMemory?: boolean;
}

/** The writes of files held in memory, each made once however many ask for its path. */
const written = new WeakMap<SpooledFile, Promise<string>>();

/** The bytes of a file held in memory (SpooledFile.inMemory): all of it is its head. */
function heldBytes(file: SpooledFile): Buffer {
  if (!file.head || file.head.length !== file.size) throw new Error('a file held in memory without its bytes');
  return file.head;
}

/** The file's path, with the file there: one held in memory (SpooledFile.inMemory) is written first. */
export async function spooledPath(file: SpooledFile): Promise<string> {
  if (!file.inMemory) return file.path;
  let write = written.get(file);
  if (!write) {
    write = writeFile(file.path, heldBytes(file), { mode: 0o600, flag: 'wx' }).then(() => file.path);
    written.set(file, write);
  }
  return write;
}

/** Whether the file may be on disk (to remove once done with): false for one only ever in memory. */
export function spooledOnDisk(file: SpooledFile): boolean {
  return !file.inMemory || written.has(file);
}

/**
 * Makes an upload the input of conversion `id`: one still only in memory is written where the
 * store keeps inputs (no spool file made and moved: an inode and a rename fewer for a small
 * upload); any other has its spool file moved into place.
 */
export async function adoptUpload(blobs: Pick<BlobStore, 'adoptInput' | 'adoptInputBytes'>, id: string, file: SpooledFile): Promise<void> {
  if (file.inMemory && !written.has(file)) await blobs.adoptInputBytes(id, heldBytes(file));
  else await blobs.adoptInput(id, await spooledPath(file));
}
