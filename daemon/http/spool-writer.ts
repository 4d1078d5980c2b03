import { open, type FileHandle } from 'node:fs/promises';

/** Bytes waiting for the disk past which the source is asked to pause (it is resumed once they are written). */
const PAUSE_ABOVE_BYTES = 1024 * 1024;

/**
 * An upload's spool file, written as its chunks arrive: the chunks that came while a write was
 * on the disk go out together in one writev. A write stream piped from the part (what this
 * replaces) made one thread-pool round trip per 64 KiB chunk and set up a Transform, a pipeline,
 * an AbortController and its DOMException per file: 0.5-0.7 ms of CPU more for a 444 KiB upload
 * on the development box (docs/benchmarks.md).
 */
export class SpoolWriter {
  private readonly handle: Promise<FileHandle>;
  private queue: Buffer[] = [];
  private queuedBytes = 0;
  private writing: Promise<void> | null = null;
  private failure: unknown = null;
  private ended = false;
  /** The source was told to pause and not yet to resume. */
  private holding = false;

  /**
   * `pause`/`resume`: told when the bytes waiting pass PAUSE_ABOVE_BYTES and when they are
   * written, so that a client faster than the disk is held back rather than buffered in memory.
   */
  constructor(path: string, private readonly flow: { pause: () => void; resume: () => void }) {
    this.handle = open(path, 'w', 0o600);
    // Reported by push/end; without a handler here a failed open would be an unhandled rejection
    // until then.
    this.handle.catch((error: unknown) => {
      this.failure ??= error;
    });
  }

  /** Queues a chunk; false once a write has failed (the caller stops the upload). */
  push(chunk: Buffer): boolean {
    if (this.failure !== null) return false;
    this.queue.push(chunk);
    this.queuedBytes += chunk.length;
    this.writing ??= this.drain();
    if (this.queuedBytes > PAUSE_ABOVE_BYTES && !this.holding) {
      this.holding = true;
      this.flow.pause();
    }
    return true;
  }

  /** Whether the source is paused by this writer (the bytes waiting are more than it holds). */
  get pausing(): boolean {
    return this.holding;
  }

  private release(): void {
    if (!this.holding) return;
    this.holding = false;
    this.flow.resume();
  }

  private async drain(): Promise<void> {
    try {
      const handle = await this.handle;
      while (this.queue.length > 0 && this.failure === null) {
        const batch = this.queue;
        this.queue = [];
        this.queuedBytes = 0;
        await writeAll(handle, batch);
        if (!this.ended) this.release();
      }
    } catch (error) {
      this.failure ??= error;
      this.queue = [];
      this.queuedBytes = 0;
      // A paused source would never send the chunk (or the end) through which its owner learns
      // of the failure (push() returning false, end() rejecting): the upload would hang.
      if (!this.ended) this.release();
    } finally {
      this.writing = null;
    }
  }

  /**
   * Writes what is queued (unless `discard`) and closes the file; rejects with the first write's
   * failure. Settles only once the descriptor is closed: a file removed while still open keeps its
   * blocks, and the disk floor reads free space right after a failed upload's file is discarded.
   */
  async end(discard = false): Promise<void> {
    this.ended = true;
    if (discard) {
      this.queue = [];
      this.queuedBytes = 0;
    }
    while (this.writing) await this.writing;
    if (!discard && this.queue.length > 0 && this.failure === null) await this.drain();
    const handle = await this.handle.catch(() => null);
    await handle?.close().catch(() => undefined);
    if (this.failure !== null && !discard) throw this.failure;
  }
}

/** writev until every byte is written (a write may take fewer than it was given). */
async function writeAll(handle: FileHandle, buffers: Buffer[]): Promise<void> {
  let pending = buffers;
  while (pending.length > 0) {
    const { bytesWritten } = await handle.writev(pending);
    if (bytesWritten === 0 && pending.some((buffer) => buffer.length > 0)) throw new Error('the spool file took no bytes');
    let skip = bytesWritten;
    let index = 0;
    while (index < pending.length && skip >= pending[index]!.length) skip -= pending[index++]!.length;
    pending = pending.slice(index);
    if (skip > 0) pending[0] = pending[0]!.subarray(skip);
  }
}
