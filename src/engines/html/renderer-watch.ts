import { childrenOf, descendantsOf, processTitle, residentBytes } from '../process/proc-readings.ts';

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
  private lastKill = Number.NEGATIVE_INFINITY;
  /** The browser's zygotes, whose children are the renderers. */
  private readonly zygotes = new Set<number>();
  /** Children of the zygotes known to be renderers. */
  private readonly known = new Set<number>();

  constructor(private readonly browserPid: number, private readonly limitBytes: number) {}

  /** Watch while the returned function has not been called (one hold per running conversion). */
  hold(): () => void {
    this.holds++;
    this.timer ??= setInterval(() => this.check(), RENDERER_POLL_MS).unref();
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

  private check(): void {
    for (const pid of this.renderers()) {
      if (residentBytes(pid) <= this.limitBytes) continue;
      try {
        process.kill(pid, 'SIGKILL');
        this.lastKill = performance.now();
      } catch {
        // Gone already.
      }
    }
  }

  /**
   * The renderers now: what the browser's zygotes forked (the zygotes found once by walking the
   * whole tree, which reads every thread's children of every process: 20 ms of CPU, too much ten
   * times a second). A child known to be a renderer is not read again. Any other child is read
   * each time, and counted while it still carries a zygote's title: a renderer just forked shows
   * its zygote's title until it renames itself, which on a loaded machine takes long enough for a
   * page to allocate gigabytes; so such a child is never taken for a zygote for good (once it was,
   * and a bomb went unwatched). Its own children are looked at too, one level down, since the
   * sandboxed zygote is itself forked by a zygote. Utility processes are never counted.
   */
  private renderers(): number[] {
    if (this.zygotes.size === 0) {
      for (const pid of descendantsOf(this.browserPid, 3)) if (ZYGOTE.test(processTitle(pid))) this.zygotes.add(pid);
      if (this.zygotes.size === 0) return [];
    }
    const found: number[] = [];
    const seen = new Set<number>();
    let parents = [...this.zygotes];
    for (let depth = 0; depth < 2 && parents.length > 0; depth++) {
      const zygoteTitled: number[] = [];
      for (const pid of parents.flatMap(childrenOf)) {
        if (this.zygotes.has(pid) || seen.has(pid)) continue;
        seen.add(pid);
        if (this.known.has(pid)) {
          found.push(pid);
          continue;
        }
        const title = processTitle(pid);
        if (RENDERER.test(title)) {
          this.known.add(pid);
          found.push(pid);
        } else if (ZYGOTE.test(title)) {
          found.push(pid);
          zygoteTitled.push(pid);
        }
      }
      parents = zygoteTitled;
    }
    for (const pid of this.known) if (!seen.has(pid)) this.known.delete(pid);
    return found;
  }
}

const RENDERER = /(?:^|[\s\0])--type=renderer(?:[\s\0]|$)/;
const ZYGOTE = /(?:^|[\s\0])--type=zygote(?:[\s\0]|$)/;

/** The browser's renderer processes (the zygote's children with --type=renderer). */
export function renderersOf(browserPid: number): number[] {
  // Chromium rewrites its processes' titles: the arguments are one string, split by spaces.
  return descendantsOf(browserPid, 4).filter((pid) => RENDERER.test(processTitle(pid)));
}
