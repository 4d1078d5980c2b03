import type { ServiceConfig } from '../src/service/config.ts';
import { baseUrlOf } from './base-url.ts';
import type { DaemonConfig } from './config.ts';
import type { Setting } from './config-settings.ts';
import type { LiveSettings } from './daemon-parts.ts';
import { readTlsFiles, type HttpServerHandle } from './listen.ts';
import type { Logger } from './log.ts';
import type { ServedOpenApi } from './openapi/served-document.ts';
import type { DiskSpace } from './ops/disk-space.ts';
import type { ProxyTrust } from './ops/proxy-trust.ts';

/** The parts of a running daemon a reload changes. */
export interface ReloadTargets {
  serviceConfig: ServiceConfig;
  logger: Logger;
  disk: DiskSpace;
  live: LiveSettings;
  proxy: ProxyTrust;
  http: HttpServerHandle;
  openApi: ServedOpenApi;
}

/** How the settings of some rows of daemon/config-settings.ts take effect while the daemon runs. */
export interface Reloader {
  /** The words `convd serve --help`, the manual and the README use for them. */
  what: string;
  /** Their keys; `prefix.*` for every leaf of a group. */
  settings: readonly string[];
  /** Applies the new configuration's values; returns a problem, if any (the old values then stay). */
  apply(next: DaemonConfig, to: ReloadTargets): void | string | Promise<void | string>;
}

/** Every reloader, in the order a reload applies them (and the help lists them). */
export const RELOADERS: readonly Reloader[] = [
  { what: 'plans', settings: ['plans.*'], apply(next, { serviceConfig }) { serviceConfig.plans = structuredClone(next.plans); } },
  {
    what: 'credit weights',
    settings: ['credit_weights.*'],
    // The registry holds this very object: change it in place.
    apply(next, { serviceConfig }) {
      Object.assign(serviceConfig.creditWeights, next.creditWeights);
    },
  },
  {
    what: 'engine time limits',
    settings: ['engine_timeout_ms.*'],
    apply(next, { serviceConfig }) {
      for (const engine of Object.keys(serviceConfig.engineTimeoutMs)) delete serviceConfig.engineTimeoutMs[engine];
      Object.assign(serviceConfig.engineTimeoutMs, next.engineTimeoutMs);
    },
  },
  {
    what: 'output caps',
    settings: ['output_cap_ratio', 'output_cap_floor_mb'],
    apply(next, { serviceConfig }) {
      serviceConfig.outputCapRatio = next.outputCapRatio;
      serviceConfig.outputCapFloorMb = next.outputCapFloorMb;
    },
  },
  { what: 'retention', settings: ['retention_days'], apply(next, { serviceConfig }) { serviceConfig.retentionDays = next.retentionDays; } },
  { what: 'log level and format', settings: ['log_level', 'log_format'], apply: (next, { logger }) => logger.configure(next.logLevel, next.logFormat) },
  { what: 'disk floor', settings: ['disk_floor_mb'], apply(next, { disk }) { disk.floorMb = next.diskFloorMb; } },
  {
    what: 'body time limits',
    settings: ['upload_idle_timeout', 'request_timeout'],
    apply(next, { live, http }) {
      live.bodyTimeouts = { idleMs: next.uploadIdleTimeoutMs, totalMs: next.requestTimeoutMs };
      http.setRequestTimeout(next.requestTimeoutMs);
    },
  },
  { what: 'trusted proxy', settings: ['trusted_proxy'], apply: (next, { proxy }) => proxy.set(next.trustedProxies) },
  {
    what: 'public URL',
    settings: ['public_url'],
    apply(next, { live, serviceConfig, http, openApi }) {
      if (live.publicUrl === next.publicUrl) return;
      live.publicUrl = next.publicUrl;
      serviceConfig.baseUrl = baseUrlOf(live.publicUrl ?? http.url);
      openApi.clear();
    },
  },
  { what: 'metrics token', settings: ['metrics_token'], apply(next, { live }) { live.metricsToken = next.metricsToken; } },
  { what: 'failed authentications per minute', settings: ['auth_failures_per_minute'], apply(next, { live }) { live.authFailuresPerMinute = next.authFailuresPerMinute; } },
  {
    what: 'TLS certificate',
    settings: ['tls_cert', 'tls_key'],
    // Read again even when the paths are the same: a renewal replaces the files where they are.
    async apply(next, { live, http }) {
      if ((live.tls === null) !== (next.tls === null)) return 'switching TLS on or off needs a restart';
      if (!next.tls) return;
      try {
        http.setTls(await readTlsFiles(next.tls));
        live.tls = next.tls;
      } catch (error) {
        return `TLS files not reloaded: ${error instanceof Error ? error.message : String(error)}`;
      }
    },
  },
  // Nothing to change in the daemon: a stop reads it from the configuration in force, which the
  // reload replaces (serve-process.ts).
  { what: 'drain timeout', settings: ['drain_timeout'], apply: () => undefined },
];

function covers(reloader: Reloader, key: string): boolean {
  return reloader.settings.some((pattern) => pattern.endsWith('.*') ? key.startsWith(pattern.slice(0, -1)) : key === pattern);
}

/**
 * The reloaders of the rows marked reloadable, and only those: a reloader whose rows are all
 * marked restart is left out. Throws when a row marked reloadable has no reloader, or one reloader
 * would apply rows of both kinds (it cannot apply part of them).
 */
export function reloadersFor(settings: readonly Setting[]): Reloader[] {
  const orphans = settings.filter((setting) => setting.reloadable && !RELOADERS.some((reloader) => covers(reloader, setting.key)));
  if (orphans.length > 0) throw new Error(`settings marked reloadable that nothing applies: ${orphans.map((s) => s.key).join(', ')}`);
  return RELOADERS.filter((reloader) => {
    const rows = settings.filter((setting) => covers(reloader, setting.key));
    const reloadable = rows.filter((setting) => setting.reloadable);
    if (reloadable.length > 0 && reloadable.length < rows.length) {
      throw new Error(`the ${reloader.what} cover settings marked reloadable and settings marked restart: ${rows.map((s) => `${s.key}${s.reloadable ? '' : ' [restart]'}`).join(', ')}`);
    }
    return reloadable.length > 0;
  });
}

/** Applies a new configuration through the reloaders given; returns the problems met. */
export async function applyReloaders(reloaders: readonly Reloader[], next: DaemonConfig, to: ReloadTargets): Promise<string[]> {
  const problems: string[] = [];
  for (const reloader of reloaders) {
    const problem = await reloader.apply(next, to);
    if (problem) problems.push(problem);
  }
  return problems;
}
