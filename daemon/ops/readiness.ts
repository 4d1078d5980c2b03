import { access, constants, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { EngineStatus } from '../../src/engines/types.ts';
import { BYTES_PER_MB } from '../../src/model/plan.ts';
import type { DiskSpace } from './disk-space.ts';

export interface Check {
  ok: boolean;
  detail: string;
}

export interface ReadinessReport {
  ready: boolean;
  /** `files` only where they are in a bucket. */
  checks: { store: Check; disk: Check; engines: Check; accepting: Check; files?: Check };
}

const errorCode = (error: unknown) => (error as NodeJS.ErrnoException).code ?? String(error);

/**
 * `GET /readyz`: can this daemon take work now? The store directory takes a write (or the
 * database answers a query within 2 s), the data
 * dir's file system is above the disk floor, the engines' binaries are still there, and it is
 * not shutting down. Checked at most once per `maxAgeMs` (the endpoint needs no key, so a flood
 * of probes must not become a flood of writes); concurrent probes share one check.
 */
export class Readiness {
  private last: { at: number; report: ReadinessReport } | null = null;
  private running: Promise<ReadinessReport> | null = null;

  constructor(
    /** The lowdb store's directory (a write is tried), or the PostgreSQL store's ping. */
    private readonly store: string | { ping(): Promise<void> },
    private readonly disk: DiskSpace,
    private readonly engines: readonly EngineStatus[],
    private readonly draining: () => boolean,
    private readonly maxAgeMs = 1000,
    /** The bucket's ping, where the files are in one. */
    private readonly bucket: { ping(): Promise<void> } | null = null,
  ) {}

  async check(): Promise<ReadinessReport> {
    if (this.last && Date.now() - this.last.at < this.maxAgeMs && !this.draining()) return this.last.report;
    this.running ??= this.probe().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async probe(): Promise<ReadinessReport> {
    const [store, disk, engines, files] = await Promise.all([this.storeCheck(), this.diskCheck(), this.engineCheck(), this.bucketCheck()]);
    const accepting: Check = this.draining() ? { ok: false, detail: 'shutting down' } : { ok: true, detail: 'accepting work' };
    const report: ReadinessReport = {
      ready: store.ok && disk.ok && engines.ok && accepting.ok && (files?.ok ?? true),
      checks: { store, disk, engines, accepting, ...(files ? { files } : {}) },
    };
    this.last = { at: Date.now(), report };
    return report;
  }

  private async storeCheck(): Promise<Check> {
    if (typeof this.store !== 'string') return pingCheck('database', this.store);
    const probe = join(this.store, '.readyz-probe');
    try {
      await writeFile(probe, new Date().toISOString());
      await unlink(probe);
      return { ok: true, detail: 'writable' };
    } catch (error) {
      return { ok: false, detail: `not writable: ${errorCode(error)}` };
    }
  }

  private async bucketCheck(): Promise<Check | null> {
    return this.bucket ? pingCheck('bucket', this.bucket) : null;
  }

  private async diskCheck(): Promise<Check> {
    await this.disk.refresh();
    const free = this.disk.free;
    if (free === null) return { ok: false, detail: 'free space unknown (statfs failed)' };
    const text = `${Math.floor(free / BYTES_PER_MB)} MiB free, floor ${this.disk.floorMb} MiB`;
    return { ok: !this.disk.low(), detail: text };
  }

  private async engineCheck(): Promise<Check> {
    const problems: string[] = [];
    let usable = 0;
    for (const engine of this.engines) {
      if (!engine.available) {
        problems.push(`${engine.name} unavailable`);
        continue;
      }
      // `binary` is a description ("sharp/libvips", "/usr/bin/ffmpeg (PATH)"): check it when it names a file.
      const path = /^(\/\S+)/.exec(engine.binary ?? '')?.[1];
      try {
        if (path) await access(path, constants.X_OK);
        usable++;
      } catch (error) {
        problems.push(`${engine.name}: ${path} ${errorCode(error)}`);
      }
    }
    // Not ready without a single engine; one missing engine only takes its own pairs away.
    return { ok: usable > 0, detail: problems.length > 0 ? `${usable} usable; ${problems.join('; ')}` : `${usable} usable` };
  }
}

/** A database or bucket that answers within 2 s. */
async function pingCheck(what: string, target: { ping(): Promise<void> }): Promise<Check> {
  try {
    await withinTwoSeconds(target.ping());
    return { ok: true, detail: `${what} answers` };
  } catch (error) {
    return { ok: false, detail: `${what} unreachable: ${error instanceof Error ? error.message || error.name : String(error)}` };
  }
}

async function withinTwoSeconds(work: Promise<void>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([work, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('no answer within 2 s')), 2000)))]);
  } finally {
    clearTimeout(timer);
  }
}
