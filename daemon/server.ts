import { toNodeHandler } from 'h3/node';
import { defaultServiceConfig } from '../src/service/config.ts';
import { openSystem, type ConversionSystem } from '../src/service/system.ts';
import { acquireDataDirLock } from '../src/store/data-dir-lock.ts';
import { createApp } from './app.ts';
import { bootstrapFirstAccount } from './bootstrap.ts';
import type { DaemonConfig } from './config.ts';
import { startAdminSocket } from './admin/socket.ts';
import { startHttpServer, type HttpServerHandle } from './http-server.ts';

export interface RunningDaemon {
  system: ConversionSystem;
  http: HttpServerHandle;
  url: string;
  close(drainMs?: number): Promise<void>;
}

function scheduleScale(raw: string | undefined): number {
  if (raw === undefined || raw === '') return 1;
  const scale = Number(raw);
  if (!(scale > 0 && scale <= 1)) throw new Error(`CONVD_WEBHOOK_SCHEDULE_SCALE must be a number in (0, 1], not ${raw}`);
  return scale;
}

/**
 * `CONVD_ENGINE_TIMEOUT_MS_<ENGINE>` (e.g. `CONVD_ENGINE_TIMEOUT_MS_MEDIA=600000`) replaces that
 * engine's time limit; the engines keep their defaults otherwise. A bad value stops the start.
 */
export function engineTimeouts(env: NodeJS.ProcessEnv, defaults: Record<string, number>): Record<string, number> {
  const limits = { ...defaults };
  for (const [name, raw] of Object.entries(env)) {
    const match = /^CONVD_ENGINE_TIMEOUT_MS_([A-Z0-9_]+)$/.exec(name);
    if (!match || raw === undefined || raw === '') continue;
    const ms = Number(raw);
    if (!Number.isInteger(ms) || ms < 1) throw new Error(`${name} must be a whole number of milliseconds >= 1, not ${raw}`);
    limits[match[1]!.toLowerCase()] = ms;
  }
  return limits;
}

export type Log = (event: string, fields: Record<string, unknown>) => void;

export async function startDaemon(config: DaemonConfig, log: Log): Promise<RunningDaemon> {
  const releaseLock = await acquireDataDirLock(config.dataDir).catch(async (error: unknown) => {
    const { mkdir } = await import('node:fs/promises');
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    await mkdir(config.dataDir, { recursive: true, mode: 0o700 });
    return acquireDataDirLock(config.dataDir);
  });
  const serviceConfig = defaultServiceConfig({
    allowPrivateUrls: config.allowPrivateUrls,
    // Test setting: shrinks the 1.5 h webhook retry schedule (e.g. 0.001) instead of sleeping through it.
    webhookScheduleScale: scheduleScale(process.env.CONVD_WEBHOOK_SCHEDULE_SCALE),
    engineTimeoutMs: engineTimeouts(process.env, defaultServiceConfig().engineTimeoutMs),
  });
  const system = await openSystem({
    dataDir: config.dataDir,
    config: serviceConfig,
    workers: config.workers,
    allowInsecureCallbacks: config.allowInsecureCallbacks,
    log,
  });
  await bootstrapFirstAccount(system.store, system.accounts, (line) => process.stderr.write(line));
  await system.start();
  const app = createApp(system);
  const http = await startHttpServer(toNodeHandler(app), config.host, config.port);
  const address = http.address;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;
  serviceConfig.baseUrl = `${(config.publicUrl ?? url).replace(/\/+$/, '').replace(/\/v1$/, '')}/v1`;
  const admin = await startAdminSocket(config.dataDir, system);

  return {
    system,
    http,
    url,
    async close(drainMs = 0) {
      await admin.close();
      await http.close(drainMs);
      await system.stop(drainMs);
      await releaseLock();
    },
  };
}
