import type { DaemonConfig } from './config.ts';
import type { BodyTimeouts } from './http/body-deadline.ts';

/**
 * The settings requests read afresh each time: a reload (daemon/reloaders.ts) changes them here
 * while requests run.
 */
export interface LiveSettings {
  publicUrl: string | undefined;
  metricsToken: string | undefined;
  tls: DaemonConfig['tls'];
  authFailuresPerMinute: number;
  bodyTimeouts: BodyTimeouts;
}

export function liveSettingsOf(config: DaemonConfig): LiveSettings {
  return {
    publicUrl: config.publicUrl,
    metricsToken: config.metricsToken,
    tls: config.tls,
    authFailuresPerMinute: config.authFailuresPerMinute,
    bodyTimeouts: { idleMs: config.uploadIdleTimeoutMs, totalMs: config.requestTimeoutMs },
  };
}

/** A stop under way, as the parts that refuse work meanwhile (readiness, submissions) and the stop itself share it. */
export interface Stopping {
  draining: boolean;
  /** Aborted once the drain is over: requests waiting for a conversion answer with its state then. */
  readonly shutdown: AbortController;
}

export function notStopping(): Stopping {
  return { draining: false, shutdown: new AbortController() };
}
