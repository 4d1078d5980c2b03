import type { InputCaps } from './data/input-caps.ts';

/** The LibreOffice pool of the office engine. */
export interface OfficeSettings {
  instances: number;
  recycleAfter: number;
  memoryLimitMb: number;
  /** Start the instances with the daemon rather than with the first document. */
  warmAtStart: boolean;
}

/** The Chromium of the HTML engine. */
export interface HtmlSettings {
  pages: number;
  recycleAfter: number;
  /** A conversion may ask for public http(s) resources (html_remote_resources). */
  remoteResources: boolean;
  /** `none`: a fresh context per conversion; `account`: pages reused within one account (html_reuse). */
  reuse: 'none' | 'account';
  /** Account reuse: conversions a page serves before it is replaced (html_page_uses). */
  pageUses: number;
  /** Account reuse: idle pages kept over all accounts (html_idle_pages). */
  idlePages: number;
  /** A renderer past this resident memory, MiB, is killed (html_memory_mb). */
  memoryLimitMb: number;
  /** Chromium's own sandbox where it can run, or off (html_sandbox). */
  sandbox: 'auto' | 'off';
  /** The uid the browser runs as when the daemon is root (html_sandbox_uid). */
  sandboxUid: number;
  /** The URL inputs' test switch, which reaches the resources a page loads too. */
  allowPrivateUrls?: boolean;
  /** url_allow_networks: private networks the resources may come from all the same. */
  allowedNetworks?: readonly string[];
}

/**
 * How long an engine that can see its own progress may go without any before its conversion ends
 * as `timeout`, ms (postscript_stall_timeout, office_stall_timeout; 0: only the time limit).
 * Ghostscript's progress is its PDF growing, counted in its processor time; LibreOffice's is the
 * pages of its PDF export, counted by the clock.
 */
export interface StallWindows {
  postscript: number;
  office: number;
}

/** What the engines are made with; plain data, so that the engine host gets the same. */
export interface EngineSettings {
  maxInputPixels: number;
  /**
   * Memory of one engine process that is not pooled (libheif's decoder, ffmpeg for still images,
   * Ghostscript), MiB: engine_memory_mb. None when unset.
   */
  processMemoryMb?: number;
  /** The data engine's per-format caps; its defaults when unset. */
  inputCaps?: InputCaps;
  /** The office engine's pool; one instance per core, on demand, when unset. */
  office?: OfficeSettings;
  /** The HTML engine's browser; pages at once per core, replaced after 200 conversions, when unset. */
  html?: HtmlSettings;
  /**
   * Runs an engine takes beyond its own number for the workers' quick lane (WorkerPool): the
   * LibreOffice pool has this many more instances, the engine host this many more processes.
   */
  quickRuns?: number;
  /** No early end when unset. */
  stallMs?: StallWindows;
}
