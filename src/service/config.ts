import { availableParallelism } from 'node:os';
import { DEFAULT_STALL_MS, type HtmlSettings, type OfficeSettings, type StallWindows } from '../engines/catalog.ts';
import { DEFAULT_INPUT_CAPS, type InputCaps } from '../engines/data/input-caps.ts';
import { DEFAULT_PLANS, type Plan, type PlanId } from '../model/plan.ts';
import { DEFAULT_CREDIT_WEIGHTS, type CreditWeights } from '../formats/registry.ts';

/** Everything the service's rules depend on; the daemon fills it from flags, env and defaults. */
export interface ServiceConfig {
  /** Public base address ending in /v1, used in `links` and `Location`. */
  baseUrl: string;
  plans: Record<PlanId, Plan>;
  creditWeights: CreditWeights;
  /** Ended conversions older than this are pruned from the store. */
  retentionDays: number;
  /** URL inputs may resolve to private/loopback addresses (trusted internal use only). */
  allowPrivateUrls: boolean;
  /** Private addresses and ranges URL inputs and web pages' resources may reach all the same. */
  urlAllowNetworks: string[];
  urlFetchTimeoutMs: number;
  /** Per engine name; an engine run longer than this fails with `timeout`. */
  engineTimeoutMs: Record<string, number>;
  defaultEngineTimeoutMs: number;
  /** Work that shows no progress for this long ends before its time limit (per engine that can tell; 0: never). */
  stallMs: StallWindows;
  /** Memory of one engine host process (the JavaScript engines' work), in MiB. */
  engineMemoryMb: number;
  /** The data engine's per-format input caps, in bytes. */
  inputCaps: InputCaps;
  /**
   * A result may be this many times its input (0: no cap by the input) but never less than
   * `outputCapFloorMb`, and never more than its plan's `max_output_mb`.
   */
  outputCapRatio: number;
  outputCapFloorMb: number;
  /** The office engine's LibreOffice pool. */
  office: OfficeSettings;
  /** The HTML engine's Chromium. */
  html: HtmlSettings;
  maxInputPixels: number;
  sweepIntervalMs: number;
  /** Multiplies the webhook retry waits: 1 in production, small in tests (never 1.5 h of sleep). */
  webhookScheduleScale: number;
  webhookTimeoutMs: number;
}

export function defaultServiceConfig(overrides: Partial<ServiceConfig> = {}): ServiceConfig {
  return {
    baseUrl: 'http://127.0.0.1:7700/v1',
    plans: structuredClone(DEFAULT_PLANS) as Record<PlanId, Plan>,
    creditWeights: { ...DEFAULT_CREDIT_WEIGHTS },
    retentionDays: 30,
    allowPrivateUrls: false,
    urlAllowNetworks: [],
    urlFetchTimeoutMs: 60_000,
    engineTimeoutMs: { image: 120_000, pdf: 300_000, pdfpages: 120_000, data: 120_000, media: 1_800_000, office: 300_000, markup: 120_000, raster: 120_000, postscript: 120_000, html: 120_000 },
    defaultEngineTimeoutMs: 600_000,
    stallMs: { ...DEFAULT_STALL_MS },
    engineMemoryMb: 1024,
    inputCaps: { ...DEFAULT_INPUT_CAPS },
    outputCapRatio: 50,
    outputCapFloorMb: 64,
    office: { instances: availableParallelism(), recycleAfter: 200, memoryLimitMb: 2048, warmAtStart: false },
    html: {
      pages: availableParallelism(), recycleAfter: 200, remoteResources: false, reuse: 'none', pageUses: 100, idlePages: 8,
      memoryLimitMb: 1024, sandbox: 'auto', sandboxUid: 64_400,
    },
    maxInputPixels: 100_000_000,
    sweepIntervalMs: 60_000,
    webhookScheduleScale: 1,
    webhookTimeoutMs: 10_000,
    ...overrides,
  };
}
