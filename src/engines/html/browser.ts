import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { engineEnvironment, ENGINE_NICENESS, findParentDeathWrapper, killGroup, trackGroup, untrackGroup } from '../process/group.ts';
import { removeOrphanedDirs } from '../process/orphaned-dirs.ts';
import { AccountPages } from './account-pages.ts';
import { lowerCrashHandlers } from './crash-handlers.ts';
import { WINDOW } from './formats.ts';
import { BROWSER_PREFERENCES, launchFlags, wrapperScript } from './launch.ts';
import { resetForNextConversion } from './page-reset.ts';
import { RendererWatch } from './renderer-watch.ts';
import type { SandboxPlan } from './sandbox.ts';

/** How pages serve conversions: a fresh context each (`none`), or reused within one account. */
export type ReuseMode = 'none' | 'account';

export interface BrowserSettings {
  /** The Chromium binary (find-chromium.ts). */
  executable: string;
  /** The browser is replaced after this many conversions (its memory grows). */
  recycleAfter: number;
  /** V8's heap limit of each page, MiB (a page's script that allocates past it crashes its tab). */
  pageHeapMb: number;
  /** A renderer past this resident memory, MiB, is killed and its conversion fails memory_limit. */
  rendererMemoryMb: number;
  reuse: ReuseMode;
  /** `account` reuse: a page is thrown away after this many conversions. */
  pageUses: number;
  /** `account` reuse: at most this many idle pages kept, over all accounts (least recently used goes). */
  idlePages: number;
  sandbox: SandboxPlan;
}

/**
 * A page and the context it alone lives in. In the default mode it serves one conversion; with
 * `account` reuse it serves later conversions of the one account it first served.
 */
export interface WarmPage {
  /** Unique in this process: tests tell pages apart by it. */
  id: number;
  context: BrowserContext;
  page: Page;
  of: Launched;
  /** The account it serves (account reuse); unset until its first conversion. */
  tenant?: string;
  uses: number;
  /**
   * Account reuse: the clean-up after its last conversion, run while the page waits idle (off
   * the conversion's path); true once it is clean. Taken pages wait for it.
   */
  ready?: Promise<boolean>;
}

/** An idle page of account reuse, as tests and the engine's report see it. */
export interface IdlePage {
  id: number;
  tenant: string;
  uses: number;
}

/** What a conversion did with its page, for `release`. */
export interface PageReturn {
  /** The conversion succeeded and nothing went wrong with the page: it may serve again. */
  reusable: boolean;
  /** Origins whose storage the conversion may have written (its site, its URL's, remote ones). */
  touched: ReadonlySet<string>;
}

/** How long a clean-up between two conversions may take before the page is thrown away instead. */
const RESET_TIME_LIMIT_MS = 5_000;
let nextPageId = 0;

/**
 * The context every page gets: nothing shared with another (no cookie, storage, cache), no
 * service worker, no download, the default window (a screenshot sets its own), no dialog or
 * popup that would wait for a person.
 */
async function openPage(launched: Launched): Promise<WarmPage> {
  const browser = await launched.browser;
  const context = await browser.newContext({
    serviceWorkers: 'block',
    acceptDownloads: false,
    javaScriptEnabled: true,
    viewport: { ...WINDOW },
    deviceScaleFactor: 1,
    locale: 'en-US',
    timezoneId: 'UTC',
  });
  try {
    // Before the page loads anything, in every frame: a print dialog, a popup or an alert would
    // wait for a person forever.
    await context.addInitScript(INIT_SCRIPT);
    const page = await context.newPage();
    context.on('page', (other) => {
      if (other !== page) void other.close().catch(() => undefined);
    });
    page.on('dialog', (dialog) => void dialog.dismiss().catch(() => undefined));
    return { id: ++nextPageId, context, page, of: launched, uses: 0 };
  } catch (error) {
    await context.close().catch(() => undefined);
    throw error;
  }
}

const INIT_SCRIPT = 'window.print = () => undefined; window.open = () => null;';

/**
 * One launched Chromium: its process group, folder, renderer watch, and how many conversions it
 * served and is serving. A retired one closes once its last conversion is done, so replacing the
 * browser never breaks a conversion running in it.
 */
class Launched {
  served = 0;
  active = 0;
  retired = false;
  pid: number | undefined;
  watch: RendererWatch | undefined;
  /** The renderer watch's hold of each page serving a conversion, by page id. */
  readonly holds = new Map<number, () => void>();
  dir: string | undefined;
  readonly browser: Promise<Browser>;
  private closing: Promise<void> | undefined;

  /**
   * Launched with the sandbox `settings.sandbox` plans; a browser that does not start sandboxed
   * (a seccomp filter or namespace rule the check did not meet) is started once more without,
   * and `onRefused` learns why, so the next launch does not try again.
   */
  constructor(settings: BrowserSettings, proxyPort: Promise<number>, onRefused: (plan: SandboxPlan) => void) {
    this.browser = this.launch(settings, settings.sandbox, proxyPort).catch(async (error: unknown) => {
      if (!settings.sandbox.on || this.pid !== undefined) throw error;
      await this.removeDir();
      const refused: SandboxPlan = { on: false, why: `Chromium did not start with its sandbox (${firstLine(error)})` };
      onRefused(refused);
      return this.launch(settings, refused, proxyPort);
    });
  }

  async close(): Promise<void> {
    this.closing ??= (async () => {
      this.watch?.stop();
      const browser = await this.browser.catch(() => undefined);
      await Promise.race([browser?.close().catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 5000))]);
      if (this.pid !== undefined) {
        killGroup(this.pid, 'SIGKILL');
        untrackGroup(this.pid);
      }
      await this.removeDir();
    })();
    return this.closing;
  }

  private async removeDir(): Promise<void> {
    if (this.dir) await rm(this.dir, { recursive: true, force: true });
    this.dir = undefined;
  }

  kill(): void {
    if (this.pid !== undefined) killGroup(this.pid, 'SIGKILL');
  }

  private async launch(settings: BrowserSettings, sandbox: SandboxPlan, proxyPort: Promise<number>): Promise<Browser> {
    const { chromium } = await import('playwright-core');
    await removeOrphanedDirs(MADE_BY, (path) => rm(path, { recursive: true, force: true }));
    const dir = await mkdtemp(join(tmpdir(), `${DIR_PREFIX}${process.pid}-`));
    this.dir = dir;
    const wrapper = join(dir, 'chromium');
    const pidFile = join(dir, 'pid');
    const preferences = join(dir, 'Preferences');
    await writeFile(preferences, BROWSER_PREFERENCES);
    // The browser's HOME is a folder of its own: a browser running as another user gets that
    // folder, while the directory stays the daemon's (the next daemon removes it after a kill -9
    // only if it is its own) and only passable to the other user.
    const home = join(dir, 'home');
    await mkdir(home, { mode: 0o700 });
    if (sandbox.on && sandbox.runAs !== undefined) await chmod(dir, 0o711);
    const paths = { executable: settings.executable, pidFile, preferences, ownDirs: [home] };
    await writeFile(wrapper, wrapperScript(paths, await findParentDeathWrapper(), sandbox), { mode: 0o700 });
    await chmod(wrapper, 0o700);
    const browser = await chromium.launch({
      executablePath: wrapper,
      args: launchFlags(await proxyPort, settings.pageHeapMb, sandbox),
      // Playwright adds --no-sandbox unless told otherwise.
      chromiumSandbox: sandbox.on,
      env: engineEnvironment({ HOME: home, XDG_CONFIG_HOME: home, XDG_CACHE_HOME: home }),
      handleSIGINT: false,
      handleSIGTERM: false,
      handleSIGHUP: false,
      timeout: 60_000,
    });
    const pid = Number((await readFile(pidFile, 'utf8').catch(() => '')).trim());
    // Started by the browser before it answers Playwright, outside its session.
    void lowerCrashHandlers(dir, ENGINE_NICENESS);
    if (pid > 0) {
      this.pid = pid;
      trackGroup(pid);
      this.watch = new RendererWatch(pid, settings.rendererMemoryMb * 1024 * 1024);
    }
    browser.on('disconnected', () => {
      this.watch?.stop();
      if (this.pid === pid && pid > 0) untrackGroup(pid);
    });
    return browser;
  }
}

/**
 * The warm Chromium of the HTML engine: launched with the first conversion, replaced after
 * `recycleAfter` conversions and whenever it dies. It runs through a wrapper that lowers its
 * priority, offers it first to the OOM killer, has the kernel kill it when the daemon dies
 * (kill -9 included) and, where it can, runs it sandboxed as a user of its own; Playwright starts
 * it in a process group of its own and kills the group on close.
 */
export class WarmBrowser {
  private current: Launched | undefined;
  private readonly retiring = new Set<Launched>();
  /**
   * The next conversion's context and page, opened while the last one renders: a page's renderer
   * process takes 100-250 ms to start, half of a small page's whole conversion. Never used twice.
   */
  private spare: { of: Launched; page: Promise<WarmPage> } | undefined;
  private readonly idle: AccountPages<WarmPage>;
  private hole: Server | undefined;
  private closed = false;
  /** The sandbox the next launch uses: the planned one, until a browser refused to start with it. */
  private sandbox: SandboxPlan;

  constructor(private readonly settings: BrowserSettings) {
    this.idle = new AccountPages(settings.idlePages);
    this.sandbox = settings.sandbox;
  }

  /** The sandbox browsers are launched with (the plan, or why a browser refused it). */
  sandboxInUse(): SandboxPlan {
    return this.sandbox;
  }

  /**
   * A page for one conversion of `tenant`: with account reuse, an idle page that served this
   * account before (never another's), else a fresh one (the spare when there is one), and the
   * next spare opened. The renderer watch holds until `release`.
   */
  async page(tenant: string | undefined): Promise<WarmPage> {
    const launched = await this.acquire();
    while (this.settings.reuse === 'account' && tenant !== undefined) {
      const reused = this.idle.take(tenant, (page) => page.of === launched);
      if (!reused) break;
      if (await reused.ready) return this.begin(reused, tenant);
      void this.discard(reused);
    }
    return this.begin(await this.freshPage(launched), tenant);
  }

  /**
   * Ends a conversion's use of its page: closed, or (account reuse, a clean success, uses left)
   * kept idle for its account while it is reset for the next conversion, which waits for that.
   * A reset that fails or does not end in time throws the page away.
   */
  async release(page: WarmPage, returned: PageReturn): Promise<void> {
    const launched = page.of;
    try {
      const keep = this.settings.reuse === 'account' && page.tenant !== undefined && returned.reusable && !this.closed
        && !launched.retired && page.uses < this.settings.pageUses && !page.page.isClosed();
      if (!keep) {
        // Not awaited: the conversion's result is written, and closing its context (10-25 ms of
        // the browser's time) need not stand between it and its end.
        void this.discard(page);
        return;
      }
      page.ready = withinTime(resetForNextConversion(page, returned.touched), RESET_TIME_LIMIT_MS);
      void page.ready.then((clean) => {
        if (!clean && this.idle.remove(page)) void this.discard(page);
      });
      for (const evicted of this.idle.give(page.tenant!, page)) void this.discard(evicted);
    } finally {
      launched.active--;
      launched.holds.get(page.id)?.();
      launched.holds.delete(page.id);
      if (launched.retired && launched.active === 0) await this.finish(launched);
    }
  }

  /** True when a renderer of `page`'s browser was killed for its memory since `since` (performance.now()). */
  killedForMemory(page: WarmPage, since: number): boolean {
    return page.of.watch?.killedSince(since) ?? false;
  }

  /** The idle pages of account reuse, for tests and the engine's report. */
  idlePages(): IdlePage[] {
    return this.idle.snapshot((page, tenant) => ({ id: page.id, tenant, uses: page.uses }));
  }

  /** Kills the browser at once (a conversion that would not end); the next conversion starts another. */
  async kill(): Promise<void> {
    const launched = this.current;
    if (!launched) return;
    launched.kill();
    this.retire(launched);
    await this.finish(launched);
  }

  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.retiring, ...(this.current ? [this.current] : [])];
    for (const launched of all) this.retire(launched);
    await Promise.all(all.map((launched) => this.finish(launched)));
    await new Promise<void>((resolve) => (this.hole ? this.hole.close(() => resolve()) : resolve()));
    this.hole = undefined;
  }

  /** The browser to open the next conversion's page in (started or replaced as needed). */
  private async acquire(): Promise<Launched> {
    if (this.closed) throw new Error('the HTML engine is closed');
    if (this.current && this.current.served >= this.settings.recycleAfter) this.retire(this.current);
    this.current ??= new Launched({ ...this.settings, sandbox: this.sandbox }, this.blackHole(), (refused) => {
      this.sandbox = refused;
    });
    const launched = this.current;
    const browser = await launched.browser.catch(async (error: unknown) => {
      if (this.current === launched) this.current = undefined;
      this.retire(launched);
      await this.finish(launched);
      throw error;
    });
    if (!browser.isConnected()) {
      this.retire(launched);
      await this.finish(launched);
      return this.acquire();
    }
    return launched;
  }

  private begin(page: WarmPage, tenant: string | undefined): WarmPage {
    page.tenant ??= tenant;
    page.uses++;
    page.of.served++;
    page.of.active++;
    if (page.of.watch) page.of.holds.set(page.id, page.of.watch.hold());
    return page;
  }

  private async freshPage(launched: Launched): Promise<WarmPage> {
    // Taken before any await: two conversions starting together must never get the same page.
    const taken = this.spare;
    this.spare = undefined;
    if (!this.closed) {
      const next = openPage(launched);
      next.catch(() => undefined);
      this.spare = { of: launched, page: next };
    }
    const spare = taken?.of === launched ? await taken.page.catch(() => undefined) : undefined;
    if (spare && !spare.page.isClosed()) return spare;
    // A spare of a browser since replaced, or whose page is gone: closed, not used.
    if (taken) void taken.page.then((unused) => unused.context.close(), () => undefined).catch(() => undefined);
    return openPage(launched);
  }

  /** No new conversion goes to `launched`; it closes when its last one is released. */
  private retire(launched: Launched): void {
    if (this.current === launched) this.current = undefined;
    if (launched.retired) return;
    launched.retired = true;
    this.retiring.add(launched);
    if (this.spare?.of === launched) {
      void this.spare.page.then((unused) => unused.context.close(), () => undefined).catch(() => undefined);
      this.spare = undefined;
    }
    for (const page of this.idle.drop((idle) => idle.of === launched)) void page.context.close().catch(() => undefined);
    if (launched.active === 0) void this.finish(launched);
  }

  private async finish(launched: Launched): Promise<void> {
    await launched.close();
    this.retiring.delete(launched);
  }

  private async discard(page: WarmPage): Promise<void> {
    await page.context.close().catch(() => undefined);
  }

  /**
   * A loopback port that accepts and drops every connection: Chromium's proxy. A request convd
   * neither answers nor aborts (a WebSocket, a beacon, WebRTC over TCP) ends here, never on the
   * network.
   */
  private async blackHole(): Promise<number> {
    if (!this.hole) {
      const hole = createServer((socket) => socket.destroy());
      await new Promise<void>((resolve, reject) => {
        hole.once('error', reject);
        hole.listen(0, '127.0.0.1', () => resolve());
      });
      hole.unref();
      this.hole = hole;
    }
    const address = this.hole.address();
    if (!address || typeof address === 'string') throw new Error('the black-hole proxy has no port');
    return address.port;
  }
}

async function withinTime(work: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([work.then(() => true, () => false), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Each daemon's browser directory is named after the daemon's pid: a dead one's is removed by the next. */
const DIR_PREFIX = 'convd-chromium-';
const MADE_BY = /^convd-chromium-(\d+)-/;

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0]?.slice(0, 200) ?? 'unknown error';
}
