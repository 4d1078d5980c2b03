import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { engineEnvironment, ENGINE_NICENESS, findParentDeathWrapper, killGroup } from '../process/group.ts';
import type { HelperExit } from '../process/helper-process.ts';
import { removeOrphanedDirs } from '../process/orphaned-dirs.ts';
import { processEnded } from '../process/proc-readings.ts';
import { Supervised, type HelperLifecycle, type Running } from '../process/supervisor.ts';
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
  /** Told when a browser starts or ends (the daemon's log), as a helper pool tells of its helpers. */
  onLifecycle?: (event: HelperLifecycle) => void;
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
  const context = await launched.value.browser.newContext({
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
 * How long a browser whose page (or its opening) failed as if it were closed is given to be seen
 * disconnecting: Playwright rejects the calls in flight when the pipe closes, and tells of the
 * disconnection a moment later.
 */
const DISCONNECT_WAIT_MS = 1_000;

/**
 * Whether `launched` has ended: its process exited (a zombie not yet reaped counts), or Playwright
 * saw it disconnect. Where `page` is given, only a closed page waits for the disconnection; where
 * none is (its opening failed), the wait is always made.
 */
async function browserGone(launched: Launched, page: Page | undefined): Promise<boolean> {
  const { browser } = launched.value;
  if (!browser.isConnected() || (launched.pid !== undefined && processEnded(launched.pid))) return true;
  if (page && !page.isClosed()) return false;
  return new Promise<boolean>((resolve) => {
    const gone = () => {
      clearTimeout(timer);
      resolve(true);
    };
    const timer = setTimeout(() => {
      browser.off('disconnected', gone);
      resolve(!browser.isConnected());
    }, DISCONNECT_WAIT_MS);
    browser.once('disconnected', gone);
  });
}

/** One launched Chromium: the browser, its renderer watch and the watch's hold of each page serving a conversion. */
interface Chromium {
  browser: Browser;
  watch: RendererWatch | undefined;
  /** By page id. */
  readonly holds: Map<number, () => void>;
}

/**
 * A Chromium under the supervisor (process/supervisor.ts), as LibreOffice's and the engine hosts'
 * helpers are: retired on its recycle, it closes once its last conversion is released, so
 * replacing the browser never breaks a conversion running in it.
 */
type Launched = Supervised<Chromium>;

/** Playwright's own launch timeout; the supervisor's is a backstop past it. */
const LAUNCH_TIMEOUT_MS = 60_000;
/** browser.close(), then SIGTERM after this, then SIGKILL after as much again. */
const STOP_GRACE_MS = 2_500;

/**
 * Launches one Chromium with `sandbox` in a folder of its own (removed when it has ended). Its
 * exit is its disconnection: what is left of its group is killed then.
 */
async function launchChromium(settings: BrowserSettings, sandbox: SandboxPlan, proxyPort: number): Promise<Running<Chromium>> {
  const { chromium } = await import('playwright-core');
  await removeOrphanedDirs(MADE_BY, removeLaunchDir);
  const dir = await mkdtemp(join(tmpdir(), `${DIR_PREFIX}${process.pid}-`));
  const removeDir = () => removeLaunchDir(dir);
  let browser: Browser;
  try {
    const wrapper = join(dir, 'chromium');
    const preferences = join(dir, 'Preferences');
    await writeFile(preferences, BROWSER_PREFERENCES);
    // The browser's HOME is a folder of its own: a browser running as another user gets that
    // folder, while the directory stays the daemon's (the next daemon removes it after a kill -9
    // only if it is its own) and only passable to the other user.
    const home = join(dir, 'home');
    await mkdir(home, { mode: 0o700 });
    // Chromium's own temporary directories (its profile's lock socket: org.chromium.Chromium.*)
    // stay behind in TMPDIR when it is killed; in here they go with this directory. Not where
    // the socket's path would pass what a Unix socket's name may hold (TMPDIR as given then).
    const temp = join(dir, 'tmp');
    await mkdir(temp, { mode: 0o700 });
    const ownTemp = temp.length <= MAX_TEMP_PATH;
    // What Playwright would make in the system's temp dir and leave there when the daemon is killed.
    const artifacts = join(dir, 'artifacts');
    await mkdir(artifacts, { mode: 0o700 });
    if (sandbox.on && sandbox.runAs !== undefined) await chmod(dir, 0o711);
    const paths = { executable: settings.executable, pidFile: join(dir, 'pid'), preferences, ownDirs: [home, temp], profileRecord: join(dir, PROFILE_RECORD) };
    await writeFile(wrapper, wrapperScript(paths, await findParentDeathWrapper(), sandbox), { mode: 0o700 });
    await chmod(wrapper, 0o700);
    browser = await chromium.launch({
      executablePath: wrapper,
      args: launchFlags(proxyPort, settings.pageHeapMb, sandbox),
      // Playwright adds --no-sandbox unless told otherwise.
      chromiumSandbox: sandbox.on,
      env: engineEnvironment({ HOME: home, XDG_CONFIG_HOME: home, XDG_CACHE_HOME: home, ...(ownTemp ? { TMPDIR: temp } : {}) }),
      artifactsDir: artifacts,
      handleSIGINT: false,
      handleSIGTERM: false,
      handleSIGHUP: false,
      timeout: LAUNCH_TIMEOUT_MS,
    });
  } catch (error) {
    await removeDir();
    throw error;
  }
  const read = Number((await readFile(join(dir, 'pid'), 'utf8').catch(() => '')).trim());
  const pid = read > 0 ? read : undefined;
  // Started by the browser before it answers Playwright, outside its session.
  lowerCrashHandlers(dir, ENGINE_NICENESS);
  const watch = pid === undefined ? undefined : new RendererWatch(pid, settings.rendererMemoryMb * 1024 * 1024);
  let end: HelperExit['end'] = 'exited';
  const exited = new Promise<HelperExit>((resolve) => {
    const gone = () => {
      watch?.stop();
      // Renderers and helpers it left in its group go too.
      if (pid !== undefined) killGroup(pid, 'SIGKILL');
      void removeDir().catch(() => undefined).then(() => resolve({ code: null, signal: null, end, stderrTail: '' }));
    };
    if (browser.isConnected()) browser.once('disconnected', gone);
    else gone();
  });
  return {
    value: { browser, watch, holds: new Map() },
    pid,
    exited,
    alive: () => browser.isConnected(),
    askToEnd: () => void browser.close().catch(() => undefined),
    onKill: () => {
      end = 'killed';
    },
  };
}

/**
 * The warm Chromium of the HTML engine: launched with the first conversion, replaced after
 * `recycleAfter` conversions and whenever it dies. It runs through a wrapper that lowers its
 * priority, offers it first to the OOM killer, has the kernel kill it when the daemon dies
 * (kill -9 included) and, where it can, runs it sandboxed as a user of its own; Playwright starts
 * it in a process group of its own, and the supervisor stops or kills that group.
 */
export class WarmBrowser {
  /** The browser new conversions go to, while it is healthy. */
  private current: Launched | undefined;
  private starting: Promise<Launched> | undefined;
  /** Every browser started and not yet ended (retired ones finishing their conversions too). */
  private readonly all = new Set<Launched>();
  /** Each conversion's use of its page's browser, ended by `release`. */
  private readonly uses = new Map<WarmPage, () => void>();
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
    const opening = this.pageIn(launched, tenant);
    try {
      // Playwright's newPage can stay pending for good when its browser is killed meanwhile (it
      // did, seen by hand: the conversion waited out page-opening's 90 s): the browser's end ends the wait.
      return await Promise.race([opening, launched.ended.then(() => Promise.reject(new Error('the browser ended while the page opened')))]);
    } catch (error) {
      // The browser died while the page opened (killed, the OOM killer, a crash): nothing of the
      // conversion had reached it yet, so the next browser is asked, once.
      if (this.closed || !(await browserGone(launched, undefined))) throw error;
      void opening.then((late) => this.release(late, { reusable: false, touched: new Set() }), () => undefined);
      this.forget(launched);
      return this.pageIn(await this.acquire(), tenant);
    }
  }

  /**
   * True when `page`'s browser has died (the page failed because its browser went, not because
   * of what it was drawing): its process has exited, or Playwright has seen it disconnect, or,
   * with the page already closed under the conversion, does so within a moment. A dead browser
   * takes no new page from then on, even before Playwright has seen it go.
   */
  async browserDied(page: WarmPage): Promise<boolean> {
    const died = await browserGone(page.of, page.page);
    if (died) this.forget(page.of);
    return died;
  }

  private async pageIn(launched: Launched, tenant: string | undefined): Promise<WarmPage> {
    // Counted from here: a browser retired while the page opens stays up for it.
    const done = launched.use();
    try {
      while (this.settings.reuse === 'account' && tenant !== undefined) {
        const reused = this.idle.take(tenant, (page) => page.of === launched);
        if (!reused) break;
        if (await reused.ready) return this.begin(reused, tenant, done);
        void this.discard(reused);
      }
      return this.begin(await this.freshPage(launched), tenant, done);
    } catch (error) {
      done();
      throw error;
    }
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
        && launched.healthy() && page.uses < this.settings.pageUses && !page.page.isClosed();
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
      launched.value.holds.get(page.id)?.();
      launched.value.holds.delete(page.id);
      this.uses.get(page)?.();
      this.uses.delete(page);
      if (!launched.healthy()) {
        this.forget(launched);
        // The last conversion of a retired browser sees it closed.
        if (launched.active === 0) await launched.ended;
      }
    }
  }

  /** True when a renderer of `page`'s browser was killed for its memory since `since` (performance.now()). */
  killedForMemory(page: WarmPage, since: number): boolean {
    return page.of.value.watch?.killedSince(since) ?? false;
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
    this.forget(launched);
    await launched.ended;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.starting?.catch(() => undefined);
    if (this.current) this.forget(this.current);
    await Promise.all([...this.all].map((launched) => launched.stop('closed')));
    await new Promise<void>((resolve) => (this.hole ? this.hole.close(() => resolve()) : resolve()));
    this.hole = undefined;
  }

  /** The browser to open the next conversion's page in (started or replaced as needed). */
  private async acquire(): Promise<Launched> {
    if (this.closed) throw new Error('the HTML engine is closed');
    // Retired on its recycle, or dead: its spare and idle pages go, and the next one starts.
    if (this.current && !this.current.healthy()) this.forget(this.current);
    const launched = this.current ?? await (this.starting ??= this.launch().finally(() => {
      this.starting = undefined;
    }));
    if (!launched.healthy()) {
      this.forget(launched);
      return this.acquire();
    }
    return launched;
  }

  /**
   * Starts a browser with the sandbox in use; one that does not start sandboxed (a seccomp filter
   * or namespace rule the check did not meet) is started once more without, and the reason kept,
   * so that the next launch does not try again. A sandboxed start is made twice before that: a
   * browser killed from outside while it starts (the OOM killer, an operator) fails its start as
   * a sandbox that does not work would, and must not turn the sandbox off for good.
   */
  private async launch(): Promise<Launched> {
    const proxyPort = await this.blackHole();
    const start = (sandbox: SandboxPlan) => Supervised.start<Chromium>({
      name: 'chromium',
      start: () => launchChromium(this.settings, sandbox, proxyPort),
      // Playwright kills a launch that takes too long; this one catches what it would not.
      startTimeoutMs: LAUNCH_TIMEOUT_MS + 10_000,
      recycleAfter: this.settings.recycleAfter,
      stopGraceMs: STOP_GRACE_MS,
      ...(this.settings.onLifecycle ? { onLifecycle: this.settings.onLifecycle } : {}),
    });
    const planned = this.sandbox;
    const launched = await start(planned)
      .catch((error: unknown) => {
        if (!planned.on) throw error;
        return start(planned);
      })
      .catch((error: unknown) => {
        if (!planned.on) throw error;
        this.sandbox = { on: false, why: `Chromium did not start with its sandbox (${firstLine(error)})` };
        this.settings.onLifecycle?.({ type: 'unsandboxed', helper: 'chromium', why: this.sandbox.why });
        return start(this.sandbox);
      });
    this.all.add(launched);
    void launched.ended.then(() => {
      this.all.delete(launched);
      this.forget(launched);
    });
    if (this.closed) {
      await launched.stop('closed');
      throw new Error('the HTML engine is closed');
    }
    this.current = launched;
    return launched;
  }

  private begin(page: WarmPage, tenant: string | undefined, done: () => void): WarmPage {
    page.tenant ??= tenant;
    page.uses++;
    this.uses.set(page, done);
    const { watch, holds } = page.of.value;
    if (watch) holds.set(page.id, watch.hold());
    return page;
  }

  private async freshPage(launched: Launched): Promise<WarmPage> {
    // Taken before any await: two conversions starting together must never get the same page.
    const taken = this.spare;
    this.spare = undefined;
    // None on a retired browser: the next conversion goes to another.
    if (!this.closed && launched.healthy()) {
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

  /** No new conversion goes to `launched`: its spare and idle pages are closed. */
  private forget(launched: Launched): void {
    if (this.current === launched) this.current = undefined;
    if (this.spare?.of === launched) {
      void this.spare.page.then((unused) => unused.context.close(), () => undefined).catch(() => undefined);
      this.spare = undefined;
    }
    for (const page of this.idle.drop((idle) => idle.of === launched)) void page.context.close().catch(() => undefined);
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
/** The file in a browser's directory that names the profile Playwright made for it (launch.ts). */
const PROFILE_RECORD = 'profile';
/** What Playwright names a Chromium profile it makes in the system's temp dir. */
const PLAYWRIGHT_PROFILE = /^playwright_chromiumdev_profile-[A-Za-z0-9]{6}$/;
/**
 * The longest TMPDIR for the browser: Chromium's lock socket goes at
 * <TMPDIR>/org.chromium.Chromium.XXXXXX/SingletonSocket, and a Unix socket's path holds 107 bytes.
 */
const MAX_TEMP_PATH = 107 - '/org.chromium.Chromium.XXXXXX/SingletonSocket'.length;

/**
 * A browser's directory once the browser has ended (a dead daemon's too), and the profile
 * Playwright made for it, named in the directory (only one Playwright would name, in the system's
 * temp dir). Playwright removes its profile when its browser ends, but not when the daemon was
 * killed, and not always when the browser was: what its dying processes still write can make that
 * removal fail (one of CI's runs left one so). Tried again here a few times for the same reason.
 */
async function removeLaunchDir(path: string): Promise<void> {
  const profile = (await readFile(join(path, PROFILE_RECORD), 'utf8').catch(() => '')).trim();
  if (dirname(profile) === tmpdir() && PLAYWRIGHT_PROFILE.test(basename(profile))) {
    await rm(profile, { recursive: true, force: true, maxRetries: 3, retryDelay: 100 }).catch(() => undefined);
  }
  await rm(path, { recursive: true, force: true });
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0]?.slice(0, 200) ?? 'unknown error';
}
