import { defaultSettingsByEngine, defaultTimeLimits } from '../engines/configuration.ts';
import { DEFAULT_MAX_INPUT_PIXELS, type SettingsByEngine } from '../engines/types.ts';
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
  /** Per engine name; an engine run longer than this fails with `timeout` (each engine's descriptor has its default). */
  engineTimeoutMs: Record<string, number>;
  defaultEngineTimeoutMs: number;
  /** Memory of one engine host process (the JavaScript engines' work), in MiB. */
  engineMemoryMb: number;
  /**
   * A result may be this many times its input (0: no cap by the input) but never less than
   * `outputCapFloorMb`, and never more than its plan's `max_output_mb`.
   */
  outputCapRatio: number;
  outputCapFloorMb: number;
  /** Each engine's own settings, by engine name (its descriptor.ts says which). */
  engines: SettingsByEngine;
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
    engineTimeoutMs: defaultTimeLimits(),
    defaultEngineTimeoutMs: 600_000,
    engineMemoryMb: 1024,
    outputCapRatio: 50,
    outputCapFloorMb: 64,
    engines: defaultSettingsByEngine(),
    maxInputPixels: DEFAULT_MAX_INPUT_PIXELS,
    sweepIntervalMs: 60_000,
    webhookScheduleScale: 1,
    webhookTimeoutMs: 10_000,
    ...overrides,
  };
}
