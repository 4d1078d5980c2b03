import { toNodeHandler } from 'h3/node';
import { listen, type Listener } from 'listhen';
import { defaultServiceConfig } from '../src/service/config.ts';
import { openSystem, type ConversionSystem } from '../src/service/system.ts';
import { acquireDataDirLock } from '../src/store/data-dir-lock.ts';
import { createApp } from './app.ts';
import { bootstrapFirstAccount } from './bootstrap.ts';
import type { DaemonConfig } from './config.ts';
import { startAdminSocket } from './admin/socket.ts';

export interface RunningDaemon {
  system: ConversionSystem;
  listener: Listener;
  url: string;
  close(drainMs?: number): Promise<void>;
}

function scheduleScale(raw: string | undefined): number {
  if (raw === undefined || raw === '') return 1;
  const scale = Number(raw);
  if (!(scale > 0 && scale <= 1)) throw new Error(`CONVD_WEBHOOK_SCHEDULE_SCALE must be a number in (0, 1], not ${raw}`);
  return scale;
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
  const listener = await listen(toNodeHandler(app), {
    port: config.port,
    hostname: config.host,
    showURL: false,
    qr: false,
    public: false,
    isTest: true,
    autoClose: false,
  });
  const address = listener.address;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;
  serviceConfig.baseUrl = `${(config.publicUrl ?? url).replace(/\/+$/, '').replace(/\/v1$/, '')}/v1`;
  // Uploads of several GB on slow links must not be cut by Node's 5-minute request timeout.
  listener.server.requestTimeout = 0;
  listener.server.headersTimeout = 60_000;
  const admin = await startAdminSocket(config.dataDir, system);

  return {
    system,
    listener,
    url,
    async close(drainMs = 0) {
      await admin.close();
      await listener.close();
      await system.stop(drainMs);
      await releaseLock();
    },
  };
}
