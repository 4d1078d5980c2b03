import { constants, readFileSync } from 'node:fs';
import { open, unlink, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { crc32 } from 'node:zlib';
import type { Adapter } from 'lowdb';
import { DirectorySync } from './directory-sync.ts';

/**
 * Writes that return once on disk. Where the platform has no O_DSYNC (Windows), 0: each write is
 * then followed by an fdatasync instead.
 */
const DATA_SYNC_FLAG = constants.O_DSYNC ?? 0;

/** The two copies of a file: `<base>.a.json` and `<base>.b.json`. */
const SLOTS = ['a', 'b'] as const;
type SlotName = (typeof SLOTS)[number];

interface Slot {
  path: string;
  /**
   * Kept open after the first write, with O_DSYNC: a write(2) returns once its bytes are on disk,
   * so a copy no shorter than the last is one system call (one hop to the thread pool), not a
   * write and an fdatasync.
   */
  handle: FileHandle | null;
  /** Bytes in the file now (at most), to cut it only when a new copy is shorter. */
  length: number;
  /** Created by this process and its directory not yet synced (the name is not durable yet). */
  unsyncedName: boolean;
  /** Known not to be on disk (read() found no file, or absent() was told): made without trying to open it first. */
  absent: boolean;
}

/** A copy as read from disk: its sequence number and data, or why it cannot be used. */
export type CopyState<T> = { valid: true; seq: number; data: T } | { valid: false; reason: string };

const HEADER = /^\{"seq":(\d+),"crc32":(\d+),"data":/;

/** One copy's bytes: `{"seq":N,"crc32":C,"data":<json>}`, C being the CRC-32 of the data's JSON (as UTF-8). */
function encode(seq: number, json: string): Buffer {
  return Buffer.from(`{"seq":${seq},"crc32":${crc32(json)},"data":${json}}`);
}

/** Checks a copy: its header, the data's length and CRC-32, then parses the data. */
export function decodeCopy<T>(bytes: Buffer): CopyState<T> {
  const head = HEADER.exec(bytes.subarray(0, 64).toString('latin1'));
  if (!head) return { valid: false, reason: 'no header' };
  if (bytes[bytes.length - 1] !== 0x7d) return { valid: false, reason: 'cut short' };
  const body = bytes.subarray(head[0].length, bytes.length - 1);
  if (crc32(body) !== Number(head[2])) return { valid: false, reason: 'checksum mismatch (a write torn by a crash)' };
  try {
    return { valid: true, seq: Number(head[1]), data: JSON.parse(body.toString('utf8')) as T };
  } catch {
    return { valid: false, reason: 'data does not parse' };
  }
}

/**
 * lowdb adapter that survives power loss and kill -9 without creating a file per write. The data
 * lives in two files written in turn, in place, each a JSON document `{"seq","crc32","data"}`;
 * a read takes the valid copy with the higher sequence number. A write torn by a crash fails its
 * checksum, and the other copy, the one before it, is read instead: the newest acknowledged state
 * is always whole on disk. (Temp file + rename, lowdb's own way, allocates an inode per write and
 * frees one; on ext4, creating a file then scans the recently freed inodes, and under `npm run
 * bench -- convert-e2e` that cost the daemon more CPU than writing the data.)
 *
 * `legacyPath`: a plain JSON file of an older layout, read when neither copy exists yet and
 * removed once the first copy is on disk. `serialize`: the data's JSON, as JSON.stringify would
 * write it (a caller that keeps parts of it already written passes its own).
 */
export class DurableJsonFile<T> implements Adapter<T> {
  private readonly slots: Record<SlotName, Slot>;
  private readonly directory: DirectorySync;
  private readonly ownsDirectory: boolean;
  private seq = 0;
  private next: SlotName = 'a';

  /**
   * `directory`: syncs the directory the copies are in, shared by the files of one directory so
   * that the first writes of several files in one flush cost one sync (and none an open and a
   * close of the directory). Without one the file keeps its own, closed with it.
   */
  constructor(
    base: string,
    private legacyPath: string | null = null,
    private readonly serialize: (data: T) => string = (data) => JSON.stringify(data),
    directory?: DirectorySync,
  ) {
    this.ownsDirectory = directory === undefined;
    this.directory = directory ?? new DirectorySync(dirname(base));
    const slot = (name: SlotName): Slot => ({ path: `${base}.${name}.json`, handle: null, length: 0, unsyncedName: false, absent: false });
    this.slots = { a: slot('a'), b: slot('b') };
  }

  /** Neither copy is on disk (the caller listed the directory): the first write makes them without looking. */
  absent(): void {
    for (const name of SLOTS) if (!this.slots[name].handle) this.slots[name].absent = true;
  }

  /** The paths of both copies of `base`. */
  static paths(base: string): string[] {
    return SLOTS.map((slot) => `${base}.${slot}.json`);
  }

  /** After read(): neither copy holds a byte (missing, or made empty beside the other: createOther). */
  neverWritten = true;

  async read(): Promise<T | null> {
    let newest: { seq: number; data: T } | null = null;
    const problems: string[] = [];
    let written = 0;
    for (const name of SLOTS) {
      const slot = this.slots[name];
      const bytes = readIfThere(slot.path);
      slot.absent = bytes === null;
      // Missing or empty (made beside the other: createOther): never written, not damaged.
      if (bytes === null || bytes.length === 0) continue;
      written++;
      this.neverWritten = false;
      slot.length = bytes.length;
      const copy = decodeCopy<T>(bytes);
      if (!copy.valid) {
        problems.push(`${slot.path}: ${copy.reason}`);
        continue;
      }
      if (!newest || copy.seq > newest.seq) {
        newest = copy;
        // The older copy (or a torn one) is the one overwritten next.
        this.next = name === 'a' ? 'b' : 'a';
      }
    }
    if (newest) {
      this.seq = newest.seq;
      return newest.data;
    }
    // Both copies written and neither whole: no crash does that (a write tears only the copy it
    // overwrites, the other is the one before it). Refuse to start on damaged data. One torn copy
    // and no other is the very first write torn: nothing was ever acknowledged from this file.
    if (written === 2) throw new Error(`no usable copy of the store file: ${problems.join('; ')}`);
    if (this.legacyPath) {
      const legacy = readIfThere(this.legacyPath);
      if (legacy !== null) return JSON.parse(legacy.toString('utf8')) as T;
    }
    return null;
  }

  async write(data: T): Promise<void> {
    const seq = this.seq + 1;
    const bytes = encode(seq, this.serialize(data));
    const slot = this.slots[this.next];
    if (!slot.handle) await this.openForWrite(slot, this.next === 'a' ? this.slots.b : this.slots.a);
    const handle = slot.handle!;
    // A write that fails half-way may leave the file as long as these bytes: the next write must
    // then cut it too, or the garbage tail would spoil a copy that is acknowledged.
    slot.length = Math.max(slot.length, bytes.length);
    const writeBytes = async (): Promise<void> => {
      for (let done = 0; done < bytes.length;) {
        done += (await handle.write(bytes, done, bytes.length - done, done)).bytesWritten;
      }
      // The bytes are on disk (O_DSYNC); a shorter copy's new length is not until it is synced.
      const shorter = bytes.length < slot.length;
      if (shorter) await handle.truncate(bytes.length);
      if (shorter || DATA_SYNC_FLAG === 0) await handle.datasync();
    };
    // A new file's name is durable once its directory is synced (twice per file's lifetime): the
    // sync runs beside the write, both done before the write returns.
    if (slot.unsyncedName) {
      await allDone([writeBytes(), this.directory.sync()]);
      slot.unsyncedName = false;
    } else {
      await writeBytes();
    }
    slot.length = bytes.length;
    this.seq = seq;
    this.next = this.next === 'a' ? 'b' : 'a';
    if (this.legacyPath) {
      await unlink(this.legacyPath).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOENT') throw error;
      });
      await fsyncDirectory(dirname(this.legacyPath));
      this.legacyPath = null;
    }
  }

  /**
   * Opens `slot` for writing, kept open with O_DSYNC. A copy not there yet is made with the other
   * beside it, at once: one directory sync names both.
   */
  private async openForWrite(slot: Slot, other: Slot): Promise<void> {
    if (!slot.absent) {
      try {
        slot.handle = await open(slot.path, constants.O_RDWR | DATA_SYNC_FLAG);
        // Found empty (made beside the other by a process that may have died before it synced
        // the directory): its name is made durable with this first write.
        if (slot.length === 0) slot.unsyncedName = true;
        return;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
    }
    const [handle] = await allDone([
      open(slot.path, constants.O_RDWR | constants.O_CREAT | constants.O_TRUNC | DATA_SYNC_FLAG, 0o600),
      this.createOther(other),
    ]);
    slot.handle = handle;
    slot.length = 0;
    slot.absent = false;
    slot.unsyncedName = true;
  }

  /**
   * The other copy, made empty beside the first one's creation when it is not there yet: the
   * one directory sync that makes the first name durable makes this one durable too, and its
   * first write has no directory to sync (a shard's two files cost one sync, not two). An empty
   * copy reads as never written.
   */
  private async createOther(other: Slot): Promise<void> {
    if (other.handle) return;
    try {
      other.handle = await open(other.path, constants.O_RDWR | constants.O_CREAT | constants.O_EXCL | DATA_SYNC_FLAG, 0o600);
      other.length = 0;
      other.absent = false;
    } catch {
      // There already (its own write opens it), or it cannot be made now (its write will say why).
    }
  }

  /** Closes the files kept open for writing (not a shared directory's sync: its owner closes it). */
  async close(): Promise<void> {
    for (const name of SLOTS) {
      const slot = this.slots[name];
      const handle = slot.handle;
      slot.handle = null;
      await handle?.close().catch(() => undefined);
    }
    if (this.ownsDirectory) await this.directory.close();
  }
}

/**
 * Promise.all that settles only once every one has: a write that fails must not return while a
 * part of it still runs on the file (the store's next batch would write the same copy beside it,
 * and the late part could cut or overwrite what that batch wrote). The first failure is thrown.
 */
async function allDone<T extends readonly unknown[]>(work: { [K in keyof T]: Promise<T[K]> }): Promise<T> {
  const settled = await Promise.allSettled(work);
  for (const outcome of settled) if (outcome.status === 'rejected') throw outcome.reason;
  return settled.map((outcome) => (outcome as PromiseFulfilledResult<unknown>).value) as unknown as T;
}

/*
 * Synchronous on purpose: copies are read only while the store opens, before anything is served,
 * and a daemon reads 4,096 of them. As promises (open, stat, read, close: four thread-pool round
 * trips each) that took about 200 ms of every start; this way about a fifth of that.
 */
function readIfThere(path: string): Buffer | null {
  try {
    return readFileSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

export async function fsyncDirectory(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
