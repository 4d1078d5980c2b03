import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import type { SettingsByEngine } from '../src/engines/types.ts';
import type { CreditWeights } from '../src/formats/registry.ts';
import type { Plan, PlanId } from '../src/model/plan.ts';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFormat = 'auto' | 'json' | 'pretty';

/**
 * What `convd serve` runs with, after flags, `CONVD_*` environment variables, the config file
 * and defaults were merged (daemon/config-load.ts; the settings are listed in
 * daemon/config-settings.ts).
 */
export interface DaemonConfig {
  /** The config file read (absolute), if any: SIGHUP reads it again. */
  configFile: string | null;
  host: string;
  port: number;
  dataDir: string;
  /** PostgreSQL for the store (database_url); null: the lowdb files under the data dir. */
  databaseUrl: string | null;
  /** An S3-compatible bucket for inputs and results (blob_url); null: the data dir. */
  blobUrl: string | null;
  workers: number;
  /** Places of the workers' quick lane; null: as many as the workers. */
  quickLane: number | null;
  /** False on a worker-only node (no_api): /v1 answers 503 api_disabled; health and metrics stay. */
  serveApi: boolean;
  /** The web face's pages (off with no_web, and on a worker-only node). */
  serveWeb: boolean;
  publicUrl: string | undefined;
  allowPrivateUrls: boolean;
  /** url_allow_networks: private addresses URL inputs may reach all the same. */
  urlAllowNetworks: string[];
  allowInsecureCallbacks: boolean;
  /** Addresses and CIDR ranges whose X-Forwarded-* headers are believed; empty: none. */
  trustedProxies: string[];
  tls: { cert: string; key: string } | null;
  /** Serve /metrics on its own address instead of the main port. */
  metricsListen: { host: string; port: number } | null;
  metricsToken: string | undefined;
  logLevel: LogLevel;
  logFormat: LogFormat;
  drainTimeoutMs: number;
  /** lease_timeout: a running conversion's claim without renewal (several nodes). */
  leaseTimeoutMs: number;
  /** Failed authentications per client address and minute before 429; 0: no limit. */
  authFailuresPerMinute: number;
  /** Free space (MiB) on the data dir's file system below which submissions are refused; 0: off. */
  diskFloorMb: number;
  /** A request body that sends nothing for this long is ended with 408. */
  uploadIdleTimeoutMs: number;
  /** A request body not complete after this long is ended with 408. */
  requestTimeoutMs: number;
  retentionDays: number;
  sweepIntervalMs: number;
  webhookScheduleScale: number;
  plans: Record<PlanId, Plan>;
  creditWeights: CreditWeights;
  /** Per engine name, milliseconds. */
  engineTimeoutMs: Record<string, number>;
  /** Memory of one engine host process, MiB. */
  engineMemoryMb: number;
  /** The largest image an engine decodes, in pixels. */
  maxInputPixels: number;
  /** Each engine's own settings, by engine name, as its descriptor's rows set them (in its units: bytes, not MiB). */
  engines: SettingsByEngine;
  outputCapRatio: number;
  outputCapFloorMb: number;
}

/** `--data-dir`, else `$CONVD_DATA_DIR`, else `$XDG_DATA_HOME/convd` (`~/.local/share/convd`). */
export function defaultDataDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.CONVD_DATA_DIR) return resolve(env.CONVD_DATA_DIR);
  const xdg = env.XDG_DATA_HOME || join(homedir(), '.local', 'share');
  return join(xdg, 'convd');
}
