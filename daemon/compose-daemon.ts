import type { Server } from 'node:http';
import { join } from 'node:path';
import { defaultServiceConfig, type ServiceConfig } from '../src/service/config.ts';
import { openSystem, type ConversionSystem } from '../src/service/system.ts';
import { WebSignIn } from '../src/sign-in/web-sign-in.ts';
import { acquireDataDirLock } from '../src/store/data-dir-lock.ts';
import { startAdminSocket } from './admin/socket.ts';
import { baseUrlOf } from './base-url.ts';
import { bootstrapFirstAccount } from './bootstrap.ts';
import { composeApp } from './compose-app.ts';
import type { DaemonConfig } from './config.ts';
import { ALL_SETTINGS } from './config-settings.ts';
import { liveSettingsOf, notStopping, type LiveSettings, type Stopping } from './daemon-parts.ts';
import { listenPlain, readTlsFiles, startHttpServer, type HttpServerHandle } from './listen.ts';
import { levelOfEvent, type Logger } from './log.ts';
import { ServedOpenApi } from './openapi/served-document.ts';
import { ConversionObserver } from './ops/conversion-observer.ts';
import { DiskSpace } from './ops/disk-space.ts';
import { metricsListener, opsRoutes, type OpsDeps } from './ops/endpoints.ts';
import { isLoopbackHost } from './ops/loopback.ts';
import type { DaemonMetrics } from './ops/metrics.ts';
import { ProxyTrust } from './ops/proxy-trust.ts';
import { Readiness } from './ops/readiness.ts';
import { requestReport } from './ops/request-report.ts';
import { countResultBytes, engineOfSystem, metricsOfSystem } from './ops/system-metrics.ts';
import { applyReloaders, reloadersFor } from './reloaders.ts';
import { stopDaemon } from './stop-daemon.ts';

export const VERSION = '0.1.0';

export interface RunningDaemon {
  system: ConversionSystem;
  http: HttpServerHandle;
  /** http(s)://host:port of the main listener. */
  url: string;
  /** http://host:port of `--metrics-listen`, when set. */
  metricsUrl: string | null;
  /**
   * Graceful stop: stops accepting connections and submissions, lets requests in flight and
   * running conversions finish for up to `drainMs`, re-queues what still runs, then flushes.
   */
  close(drainMs: number): Promise<{ finished: number; requeued: number }>;
  /** Applies the reloadable part of a new configuration (SIGHUP). Returns problems, if any. */
  reload(next: DaemonConfig): Promise<string[]>;
}

function serviceConfigOf(config: DaemonConfig): ServiceConfig {
  return defaultServiceConfig({
    allowPrivateUrls: config.allowPrivateUrls,
    urlAllowNetworks: [...config.urlAllowNetworks],
    webhookScheduleScale: config.webhookScheduleScale,
    engineTimeoutMs: { ...config.engineTimeoutMs },
    plans: structuredClone(config.plans),
    creditWeights: { ...config.creditWeights },
    retentionDays: config.retentionDays,
    sweepIntervalMs: config.sweepIntervalMs,
    engineMemoryMb: config.engineMemoryMb,
    maxInputPixels: config.maxInputPixels,
    engines: structuredClone(config.engines),
    outputCapRatio: config.outputCapRatio,
    outputCapFloorMb: config.outputCapFloorMb,
  });
}

/**
 * The daemon put together, each part once those it needs exist: the data dir's lock, the disk
 * watch, the conversion system and its metrics, the HTTP face and its listeners, the admin socket,
 * then the first account. Gives the running daemon, with its stop and its reload.
 */
export async function startDaemon(config: DaemonConfig, logger: Logger): Promise<RunningDaemon> {
  const reloaders = reloadersFor(ALL_SETTINGS);
  const releaseLock = await lockDataDir(config.dataDir);
  const serviceConfig = serviceConfigOf(config);
  // Made first: the service keeps results and URL inputs within the room above its floor.
  const disk = await watchDisk(config, logger);
  const observer = new ConversionObserver(logger);
  const system = await openDaemonSystem(config, serviceConfig, disk, observer, logger);
  const metrics = metricsOfSystem(system, { version: VERSION, workers: config.workers, disk });
  observer.count(metrics, engineOfSystem(system));
  const recount = await countResultBytes(system, metrics, config.databaseUrl !== null && config.blobUrl !== null);
  await system.start();

  const live = liveSettingsOf(config);
  const proxy = new ProxyTrust(config.trustedProxies);
  const stopping = notStopping();
  const openApi = new ServedOpenApi(VERSION);
  const ops = opsOf(system, config, { disk, metrics, live, stopping });
  // One for the pages and the admin socket: sign-in links and sessions are records in the store.
  const signIn = new WebSignIn(system.store, system.accounts);
  const app = composeApp({
    system, config, serviceConfig, live, proxy, disk, stopping, openApi, signIn,
    onRequestDone: requestReport(metrics, logger, proxy),
    extraRoutes: opsRoutes(ops, metricsOnMainPort(config) ? () => metricsServed(ops) : null),
  });

  const http = await startHttpServer(app.listener, config.host, config.port, config.tls ? await readTlsFiles(config.tls) : null, config.requestTimeoutMs);
  serviceConfig.baseUrl = baseUrlOf(live.publicUrl ?? http.url);
  const metricsListening = config.metricsListen ? await listenForMetrics(ops, config.metricsListen) : null;
  const adminSocket = await startAdminSocket(config.dataDir, system, signIn);
  // Only now that every address is bound: a start that fails on one (EADDRINUSE) has created no
  // account, so the next start still creates it and shows its key.
  await bootstrapFirstAccount(system.accounts, { write: (line) => process.stderr.write(line), terminal: process.stderr.isTTY === true, dataDir: config.dataDir });
  if (metricsOnMainPort(config) && !metricsServed(ops)) warnMetricsNotServed(logger, config.host, http.url);

  return {
    system,
    http,
    url: http.url,
    metricsUrl: metricsListening?.url ?? null,
    close: (drainMs) => stopDaemon({ system, stopping, http, metricsServer: metricsListening?.server ?? null, adminSocket, recount, releaseLock }, drainMs),
    reload: (next) => applyReloaders(reloaders, next, { serviceConfig, logger, disk, live, proxy, http, openApi }),
  };
}

/** Locks the data dir against a second daemon, making it (owner-only) on a first start. */
async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  return acquireDataDirLock(dataDir).catch(async (error: unknown) => {
    const { mkdir } = await import('node:fs/promises');
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
    return acquireDataDirLock(dataDir);
  });
}

/** The free space on the data dir, logged when it crosses the floor either way. */
async function watchDisk(config: DaemonConfig, logger: Logger): Promise<DiskSpace> {
  const disk = new DiskSpace(config.dataDir, config.diskFloorMb, (low, freeMb) => {
    if (low) logger.log('warn', 'disk.low', { free_mb: freeMb, floor_mb: disk.floorMb, message: 'free space is below the floor: submissions are refused (503) until it recovers' });
    else logger.log('info', 'disk.recovered', { free_mb: freeMb, floor_mb: disk.floorMb });
  });
  await disk.refresh();
  return disk;
}

function openDaemonSystem(config: DaemonConfig, serviceConfig: ServiceConfig, disk: DiskSpace, observer: ConversionObserver, logger: Logger): Promise<ConversionSystem> {
  return openSystem({
    dataDir: config.dataDir,
    databaseUrl: config.databaseUrl,
    // One daemon per database: without its lock, it stops (draining) rather than run beside another.
    onStoreLost: () => process.kill(process.pid, 'SIGTERM'),
    blobUrl: config.blobUrl,
    leaseMs: config.leaseTimeoutMs,
    config: serviceConfig,
    diskRoom: disk,
    workers: config.workers,
    ...(config.quickLane !== null ? { quickLane: config.quickLane } : {}),
    allowInsecureCallbacks: config.allowInsecureCallbacks,
    // What the engines' probes found, kept for the next start (a second start probes nothing).
    findingsCache: join(config.dataDir, 'cache', 'engines.json'),
    log: (event, fields) => logger.log(levelOfEvent(event), event, fields),
    observer,
  });
}

/** What /healthz, /readyz and /metrics answer from. */
function opsOf(system: ConversionSystem, config: DaemonConfig, parts: { disk: DiskSpace; metrics: DaemonMetrics; live: LiveSettings; stopping: Stopping }): OpsDeps {
  const storePing = system.store.ping?.bind(system.store);
  const bucketPing = system.blobs.ping?.bind(system.blobs);
  const readiness = new Readiness(
    storePing ? { ping: storePing } : join(config.dataDir, 'store'),
    parts.disk,
    system.registry.statuses,
    () => parts.stopping.draining,
    undefined,
    bucketPing ? { ping: bucketPing } : null,
  );
  return { readiness, metrics: parts.metrics, metricsToken: () => parts.live.metricsToken, loopback: isLoopbackHost(config.host) };
}

/** `metrics_listen`: /metrics on an address of its own, `http://host:port`. */
async function listenForMetrics(ops: OpsDeps, at: { host: string; port: number }): Promise<{ server: Server; url: string }> {
  const server = metricsListener(ops);
  return { server, url: await listenPlain(server, at) };
}

const metricsOnMainPort = (config: DaemonConfig) => config.metricsListen === null;

/**
 * Beyond loopback, /metrics on the API port would tell anyone who reaches the API how busy it
 * is, what it runs and which routes fail: there it needs its token (which a reload may set).
 */
const metricsServed = (ops: OpsDeps) => ops.loopback || ops.metricsToken() !== undefined;

function warnMetricsNotServed(logger: Logger, host: string, url: string): void {
  logger.log('warn', 'metrics.not_served', {
    message: `/metrics is not served on ${url}: ${host} is not a loopback address and no metrics token is set. `
      + 'Set metrics_token (--metrics-token, CONVD_METRICS_TOKEN; SIGHUP applies it) to serve it there behind Authorization: Bearer, '
      + 'or metrics_listen (--metrics-listen 127.0.0.1:9464) to serve it on an address of its own',
  });
}
