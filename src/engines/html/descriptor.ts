import { availableParallelism } from 'node:os';
import { defineEngine } from '../descriptor.ts';

/** The Chromium of the HTML engine. */
export interface HtmlSettings {
  pages: number;
  recycleAfter: number;
  /** A conversion may ask for public http(s) resources. */
  remoteResources: boolean;
  /** `none`: a fresh context per conversion; `account`: pages reused within one account. */
  reuse: 'none' | 'account';
  /** Account reuse: conversions a page serves before it is replaced. */
  pageUses: number;
  /** Account reuse: idle pages kept over all accounts. */
  idlePages: number;
  /** A renderer past this resident memory, MiB, is killed. */
  memoryLimitMb: number;
  /** Chromium's own sandbox where it can run, or off. */
  sandbox: 'auto' | 'off';
  /** The uid the browser runs as when the daemon is root. */
  sandboxUid: number;
}

/**
 * Chromium: one warm browser, a context per conversion, this many pages at once. Before pdf in the
 * catalog: where Chromium runs, svg -> pdf is its vectors, not the pdf engine's pixels.
 */
export const html = defineEngine<HtmlSettings>({
  name: 'html',
  defaults: () => ({
    pages: availableParallelism(), recycleAfter: 200, remoteResources: false, reuse: 'none', pageUses: 100, idlePages: 8,
    memoryLimitMb: 1024, sandbox: 'auto', sandboxUid: 64_400,
  }),
  settings: [
    { key: 'html_pages', field: 'pages', kind: { type: 'integer', min: 1, max: 64 }, arg: 'n', listedAt: 4, help: 'web pages Chromium renders at once for the HTML engine, each in a context of its own (default: available cores)' },
    { key: 'html_recycle_after', field: 'recycleAfter', kind: { type: 'integer', min: 1 }, arg: 'n', listedAt: 5, help: 'the HTML engine\'s browser is replaced after this many conversions' },
    { key: 'html_remote_resources', field: 'remoteResources', kind: { type: 'boolean' }, listedAt: 6, help: 'a conversion may ask (allow_remote_resources) for its page to load public http(s) resources, each through the address policy of URL inputs (default: only its own files)' },
    { key: 'html_reuse', field: 'reuse', kind: { type: 'choice', values: ['none', 'account'] }, arg: 'mode', listedAt: 7, help: 'none: every conversion gets a fresh browser context (nothing shared); account: a warm page serves later conversions of the same account only, cleared between them (faster; for one team\'s trusted accounts)' },
    { key: 'html_page_uses', field: 'pageUses', kind: { type: 'integer', min: 1, max: 100_000 }, arg: 'n', listedAt: 8, help: 'with html_reuse account: a page is replaced after this many conversions' },
    { key: 'html_idle_pages', field: 'idlePages', kind: { type: 'integer', min: 1, max: 1_000 }, arg: 'n', listedAt: 9, help: 'with html_reuse account: idle pages kept over all accounts (the least recently used is closed first)' },
    { key: 'html_memory_mb', field: 'memoryLimitMb', kind: { type: 'integer', min: 128, max: 1_048_576 }, arg: 'MiB', listedAt: 10, help: 'resident memory of one page\'s renderer; past it the renderer is killed and its conversion fails memory_limit' },
    { key: 'html_sandbox', field: 'sandbox', kind: { type: 'choice', values: ['auto', 'off'] }, arg: 'mode', listedAt: 11, help: 'auto: Chromium\'s own sandbox wherever it can run (as root, the browser runs as html_sandbox_uid); off: --no-sandbox' },
    { key: 'html_sandbox_uid', field: 'sandboxUid', kind: { type: 'integer', min: 1, max: 4_294_967_294 }, arg: 'uid', listedAt: 12, help: 'when the daemon runs as root, the unprivileged uid (used by nothing else) the sandboxed browser runs as' },
  ],
  // A page per conversion: a user's own machine renders as many as it converts at once.
  inProcess: (own, workers) => ({ ...own, pages: workers }),
  limits: { timeLimitMs: 120_000, listedAt: 10 },
  loader: (settings, own) => ({
    maxConcurrentRuns: own?.pages ?? availableParallelism(),
    startsClock: true,
    load: async () => (await import('./html-engine.ts')).createHtmlEngine({
      ...own, maxInputPixels: settings.maxInputPixels, allowPrivateUrls: settings.allowPrivateUrls, allowedNetworks: settings.allowedNetworks,
      ...(settings.onLifecycle ? { onLifecycle: settings.onLifecycle } : {}),
    }),
  }),
  binaries: ['chromium', 'chromium-browser', 'google-chrome-stable', 'google-chrome'].map((name) => ({ name, env: 'CONVD_CHROMIUM_PATH' })),
});
