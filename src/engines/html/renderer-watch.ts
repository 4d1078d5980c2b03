import { readFile } from 'node:fs/promises';
import { descendantsOf, residentBytes } from '../process/resident-memory.ts';

/** How often the renderers' memory is read while a conversion runs. */
export const RENDERER_POLL_MS = 100;
/** A page crash this soon after a renderer was killed for its memory is that kill's. */
const KILL_ATTRIBUTION_MS = 10_000;

/**
 * Watches the resident memory of a browser's renderer processes while conversions run, and
 * kills any renderer past the limit. V8's heap limit (--max-old-space-size) does not count typed
 * arrays, images or the DOM, so a page can otherwise take all the machine's memory. Each
 * conversion's page is a browser context of its own, and Chromium never puts two contexts in one
 * renderer: the kill ends that page alone (its 'crash'), the browser and the other pages go on.
 * Read every RENDERER_POLL_MS, so a page can pass the limit by what it allocates in that time.
 */
export class RendererWatch {
  private holds = 0;
  private timer: NodeJS.Timeout | undefined;
  private checking = false;
  private lastKill = Number.NEGATIVE_INFINITY;

  constructor(private readonly browserPid: number, private readonly limitBytes: number) {}

  /** Watch while the returned function has not been called (one hold per running conversion). */
  hold(): () => void {
    this.holds++;
    this.timer ??= setInterval(() => void this.check(), RENDERER_POLL_MS).unref();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--this.holds === 0) this.stop();
    };
  }

  /** True when a renderer was killed for its memory since `since` (ms, performance.now()). */
  killedSince(since: number): boolean {
    return this.lastKill >= since && performance.now() - this.lastKill < KILL_ATTRIBUTION_MS;
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private async check(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    try {
      for (const pid of await renderersOf(this.browserPid)) {
        if (await residentBytes(pid) <= this.limitBytes) continue;
        try {
          process.kill(pid, 'SIGKILL');
          this.lastKill = performance.now();
        } catch {
          // Gone already.
        }
      }
    } finally {
      this.checking = false;
    }
  }
}

const RENDERER = /(?:^|[\s\0])--type=renderer(?:[\s\0]|$)/;

/** The browser's renderer processes (the zygote's children with --type=renderer). */
export async function renderersOf(browserPid: number): Promise<number[]> {
  const pids = await descendantsOf(browserPid, 4);
  const kinds = await Promise.all(pids.map((pid) => readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')));
  // Chromium rewrites its processes' titles: the arguments are one string, split by spaces.
  return pids.filter((_, index) => RENDERER.test(kinds[index]!));
}
