import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { ENGINE_NICENESS, engineEnvironment, findParentDeathWrapper, killGroup, trackGroup, untrackGroup } from '../process/group.ts';
import { removeOrphanedDirs } from '../process/orphaned-dirs.ts';
import { WINDOW } from './formats.ts';

export interface BrowserSettings {
  /** The Chromium binary (find-chromium.ts). */
  executable: string;
  /** The browser is replaced after this many conversions (its memory grows). */
  recycleAfter: number;
  /** V8's heap limit of each page, MiB (a page's script that allocates past it crashes its tab). */
  pageHeapMb: number;
}

/**
 * Flags of every launch (DESIGN.md): no sandbox (convd runs Chromium as its own user, often
 * root in containers, where the sandbox refuses to start; the page is held by what convd allows
 * it to load instead), no GPU, no background traffic of its own. Every request the page makes
 * goes to a proxy that is a black hole of convd's own (see `blackHole`): what convd does not
 * answer itself (request interception) reaches nothing, WebSockets and IP literals included.
 */
function launchFlags(proxyPort: number, pageHeapMb: number): string[] {
  return [
    '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--no-default-browser-check',
    '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-domain-reliability',
    '--disable-breakpad', '--disable-client-side-phishing-detection', '--metrics-recording-only', '--mute-audio',
    '--disable-features=Translate,MediaRouter,OptimizationHints,AutofillServerCommunication,InterestFeedContentSuggestions',
    `--proxy-server=http://127.0.0.1:${proxyPort}`, '--proxy-bypass-list=<-loopback>',
    `--js-flags=--max-old-space-size=${pageHeapMb}`,
  ];
}

/** A context of its own with its one page, not yet used by anything. */
export interface FreshPage {
  context: BrowserContext;
  page: Page;
}

/**
 * The context every conversion gets: nothing shared with another (no cookie, storage, cache),
 * no service worker, no download, the default window (a screenshot sets its own).
 */
async function openFreshPage(browser: Browser): Promise<FreshPage> {
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
    return { context, page: await context.newPage() };
  } catch (error) {
    await context.close().catch(() => undefined);
    throw error;
  }
}

/**
 * The one warm Chromium of the HTML engine: launched with the first conversion, a fresh context
 * per conversion (render.ts), replaced after `recycleAfter` conversions and whenever it dies.
 * It runs through a wrapper that lowers its priority, offers it first to the OOM killer and has
 * the kernel kill it when the daemon dies (kill -9 included); Playwright starts it in a process
 * group of its own and kills the group on close.
 */
export class WarmBrowser {
  private browser: Promise<Browser> | undefined;
  /**
   * The next conversion's context and page, opened while the last one renders: a page's renderer
   * process takes 100-250 ms to start, half of a small page's whole conversion. Never used twice.
   */
  private spare: { of: Browser; page: Promise<FreshPage> } | undefined;
  private served = 0;
  private pid: number | undefined;
  private dir: string | undefined;
  private hole: Server | undefined;
  private closed = false;

  constructor(private readonly settings: BrowserSettings) {}

  /** The browser to open the next conversion's context in (started or replaced as needed). */
  async acquire(): Promise<Browser> {
    if (this.closed) throw new Error('the HTML engine is closed');
    if (this.browser && this.served >= this.settings.recycleAfter) await this.retire();
    this.browser ??= this.launch();
    const browser = await this.browser.catch(async (error: unknown) => {
      this.browser = undefined;
      throw error;
    });
    if (!browser.isConnected()) {
      await this.retire();
      return this.acquire();
    }
    this.served++;
    return browser;
  }

  /** A fresh context and page for one conversion (the spare when there is one), and the next spare opened. */
  async freshPage(): Promise<FreshPage> {
    const browser = await this.acquire();
    // Taken before any await: two conversions starting together must never get the same page.
    const taken = this.spare;
    this.spare = undefined;
    if (!this.closed) {
      const next = openFreshPage(browser);
      next.catch(() => undefined);
      this.spare = { of: browser, page: next };
    }
    const spare = taken?.of === browser ? await taken.page.catch(() => undefined) : undefined;
    if (spare && !spare.page.isClosed()) return spare;
    // A spare of a browser since replaced, or whose page is gone: closed, not used.
    if (taken) void taken.page.then((unused) => unused.context.close(), () => undefined).catch(() => undefined);
    return openFreshPage(browser);
  }

  /** Kills the browser at once (a conversion that would not end); the next acquire starts another. */
  async kill(): Promise<void> {
    if (this.pid !== undefined) killGroup(this.pid, 'SIGKILL');
    await this.retire();
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.retire();
    await new Promise<void>((resolve) => (this.hole ? this.hole.close(() => resolve()) : resolve()));
    this.hole = undefined;
  }

  private async retire(): Promise<void> {
    const spare = this.spare;
    this.spare = undefined;
    if (spare) await spare.page.then((unused) => unused.context.close(), () => undefined).catch(() => undefined);
    const current = this.browser;
    this.browser = undefined;
    this.served = 0;
    const pid = this.pid;
    this.pid = undefined;
    if (current) {
      const browser = await current.catch(() => undefined);
      await Promise.race([browser?.close().catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 5000))]);
    }
    if (pid !== undefined) {
      killGroup(pid, 'SIGKILL');
      untrackGroup(pid);
    }
    if (this.dir) await rm(this.dir, { recursive: true, force: true });
    this.dir = undefined;
  }

  private async launch(): Promise<Browser> {
    const { chromium } = await import('playwright-core');
    const proxyPort = await this.blackHole();
    await removeOrphanedDirs(MADE_BY, (path) => rm(path, { recursive: true, force: true }));
    const dir = await mkdtemp(join(tmpdir(), `${DIR_PREFIX}${process.pid}-`));
    this.dir = dir;
    const wrapper = join(dir, 'chromium');
    const pidFile = join(dir, 'pid');
    await writeFile(wrapper, wrapperScript(this.settings.executable, pidFile, await findParentDeathWrapper()), { mode: 0o700 });
    await chmod(wrapper, 0o700);
    const browser = await chromium.launch({
      executablePath: wrapper,
      args: launchFlags(proxyPort, this.settings.pageHeapMb),
      env: engineEnvironment({ HOME: dir, XDG_CONFIG_HOME: dir, XDG_CACHE_HOME: dir }),
      handleSIGINT: false,
      handleSIGTERM: false,
      handleSIGHUP: false,
      timeout: 60_000,
    });
    const pid = Number((await readFile(pidFile, 'utf8').catch(() => '')).trim());
    if (pid > 0) {
      this.pid = pid;
      trackGroup(pid);
    }
    browser.on('disconnected', () => {
      if (this.pid === pid && pid > 0) untrackGroup(pid);
    });
    return browser;
  }

  /**
   * A loopback port that accepts and drops every connection: Chromium's proxy. A request convd
   * neither answers nor aborts (a WebSocket, a beacon) ends here, never on the network.
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

/** Each daemon's browser directory is named after the daemon's pid: a dead one's is removed by the next. */
const DIR_PREFIX = 'convd-chromium-';
const MADE_BY = /^convd-chromium-(\d+)-/;

/**
 * The shell script Playwright starts as "the browser": it records its pid (exec keeps it), takes
 * the OOM killer's first place and a lower priority, and execs Chromium through setpriv
 * --pdeathsig where there is one.
 */
function wrapperScript(executable: string, pidFile: string, setpriv: string | null): string {
  const quote = (text: string) => `'${text.replace(/'/g, "'\\''")}'`;
  return [
    '#!/bin/sh',
    `echo $$ > ${quote(pidFile)}`,
    'echo 1000 > /proc/self/oom_score_adj 2>/dev/null',
    `exec ${setpriv ? `${quote(setpriv)} --pdeathsig KILL -- ` : ''}nice -n ${ENGINE_NICENESS} ${quote(executable)} "$@"`,
    '',
  ].join('\n');
}
