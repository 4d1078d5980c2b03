import { readFile } from 'node:fs/promises';
import type { IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { officeRetries } from '../src/engines/office/retries.ts';
import { BYTES_PER_MB } from '../src/model/plan.ts';
import { defaultServiceConfig, type ServiceConfig } from '../src/service/config.ts';
import { openSystem, type ConversionSystem } from '../src/service/system.ts';
import { acquireDataDirLock } from '../src/store/data-dir-lock.ts';
import { createApp } from './app.ts';
import type { RequestInfo } from './http/pipeline.ts';
import { bootstrapFirstAccount } from './bootstrap.ts';
import type { DaemonConfig } from './config.ts';
import { startAdminSocket } from './admin/socket.ts';
import { startHttpServer, type HttpServerHandle, type TlsFiles } from './listen.ts';
import { levelOfEvent, type Logger } from './log.ts';
import { buildOpenApi } from './openapi/document.ts';
import { DiskSpace, LOW_DISK_RETRY_AFTER } from './ops/disk-space.ts';
import { metricsListener, opsRoutes } from './ops/endpoints.ts';
import { isLoopbackHost } from './ops/loopback.ts';
import { DaemonMetrics } from './ops/metrics.ts';
import { ProxyTrust } from './ops/proxy-trust.ts';
import { Readiness } from './ops/readiness.ts';
import { ROUTES } from './routes/table.ts';
import { registerWebFace } from './web/routes.ts';
import { WebSignIn } from '../src/sign-in/web-sign-in.ts';
import type { SubmissionRefusal } from './http/refusal.ts';
import { ACTIVE_STATUSES } from '../src/model/status.ts';

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

/**
 * How often a node of a cluster counts the bytes of downloadable results again (convd_results_bytes):
 * a sum over the succeeded rows, so not at every scrape.
 */
const RESULTS_RECOUNT_MS = 5 * 60_000;
/** Seconds a submission refused at shutdown is told to wait. */
const SHUTDOWN_RETRY_AFTER = 5;
/** After the conversions drained, requests still open get this long to end (an upload, a wait being answered). */
const REQUEST_GRACE_MS = 2_000;

function baseUrlOf(address: string): string {
  return `${address.replace(/\/+$/, '').replace(/\/v1$/, '')}/v1`;
}

/**
 * The path the web pages are served under: public_url's path ('' at the host's root). A public_url
 * that names /v1 itself means the same as without it, as for the API's links (baseUrlOf).
 */
export function pagesBasePath(publicUrl: string | undefined): string {
  return publicUrl ? new URL(baseUrlOf(publicUrl)).pathname.replace(/\/v1$/, '') : '';
}

async function readTls(tls: DaemonConfig['tls']): Promise<TlsFiles | null> {
  return tls ? { cert: await readFile(tls.cert), key: await readFile(tls.key) } : null;
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
    office: { ...config.office },
    stallMs: { ...config.stallMs },
    html: { ...config.html },
    inputCaps: {
      md: config.inputCapsMb.md * BYTES_PER_MB,
      json: config.inputCapsMb.json * BYTES_PER_MB,
      yaml: config.inputCapsMb.yaml * BYTES_PER_MB,
    },
    outputCapRatio: config.outputCapRatio,
    outputCapFloorMb: config.outputCapFloorMb,
  });
}

export async function startDaemon(config: DaemonConfig, logger: Logger): Promise<RunningDaemon> {
  const releaseLock = await acquireDataDirLock(config.dataDir).catch(async (error: unknown) => {
    const { mkdir } = await import('node:fs/promises');
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    await mkdir(config.dataDir, { recursive: true, mode: 0o700 });
    return acquireDataDirLock(config.dataDir);
  });
  const serviceConfig = serviceConfigOf(config);
  let metrics: DaemonMetrics | null = null;
  let system: ConversionSystem | null = null;
  const engineOf = (record: { source: string; target: string }) => system?.registry.pair(record.source, record.target)?.engine ?? 'none';

  // Made first: the service keeps results and URL inputs within the room above its floor.
  const disk = new DiskSpace(config.dataDir, config.diskFloorMb, (low, freeMb) => {
    if (low) logger.log('warn', 'disk.low', { free_mb: freeMb, floor_mb: disk.floorMb, message: 'free space is below the floor: submissions are refused (503) until it recovers' });
    else logger.log('info', 'disk.recovered', { free_mb: freeMb, floor_mb: disk.floorMb });
  });
  await disk.refresh();

  system = await openSystem({
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
    observer: {
      onTransition(record, from) {
        metrics?.transition(record, from, engineOf(record));
        logger.log('info', 'conversion', {
          id: record.id, account: record.account_id, from, to: record.status,
          ...(record.status === 'processing' || record.status === 'succeeded' || record.status === 'failed' ? { engine: engineOf(record) } : {}),
          ...(record.error ? { code: record.error.code } : {}),
        });
      },
      onDeliveryAttempt: (record) => metrics?.deliveryAttempt(record),
    },
  });
  const running = system;

  metrics = new DaemonMetrics({
    version: VERSION,
    workers: config.workers,
    engines: running.registry.statuses.filter((s) => s.available).map((s) => s.name),
    queueDepth: () => running.queue.size,
    leasesHeld: () => running.queue.leasesHeld ?? null,
    async runningEngines() {
      const records = await Promise.all(running.pool.activeIds().map((id) => running.store.getConversion(id)));
      // A worker lets go of a conversion a moment after it ended (its files are tidied first):
      // an ended one is not running, whatever the pool still holds.
      return records.filter((r): r is NonNullable<typeof r> => r !== undefined && ACTIVE_STATUSES.has(r.status)).map((r) => engineOf(r));
    },
    diskFreeBytes: () => disk.free,
    officeRetries,
  });
  metrics.setResultsBytes(await running.store.resultBytes());
  // On a cluster other nodes' results come and go in the bucket too: this node's transitions alone drift.
  const recount = config.databaseUrl && config.blobUrl
    ? setInterval(() => void running.store.resultBytes().then((bytes) => metrics.setResultsBytes(bytes), () => undefined), RESULTS_RECOUNT_MS)
    : null;
  recount?.unref();

  await running.start();

  // What SIGHUP may change while requests run: read through `live` each time.
  const live = {
    publicUrl: config.publicUrl, metricsToken: config.metricsToken, tls: config.tls, authFailuresPerMinute: config.authFailuresPerMinute,
    bodyTimeouts: { idleMs: config.uploadIdleTimeoutMs, totalMs: config.requestTimeoutMs },
  };
  const proxy = new ProxyTrust(config.trustedProxies);
  let draining = false;
  const shutdown = new AbortController();
  const storePing = running.store.ping?.bind(running.store);
  const storeProbe = storePing ? { ping: storePing } : join(config.dataDir, 'store');
  const bucketPing = running.blobs.ping?.bind(running.blobs);
  const readiness = new Readiness(storeProbe, disk, running.registry.statuses, () => draining, undefined, bucketPing ? { ping: bucketPing } : null);
  const openApiCache = new Map<string, string>();
  // Beyond loopback, /metrics on the API port would tell anyone who reaches the API how busy it
  // is, what it runs and which routes fail: there it needs its token (which SIGHUP may set).
  const metricsOnMainPort = config.metricsListen === null;
  const loopback = isLoopbackHost(config.host);
  const ops = { readiness, metrics, metricsToken: () => live.metricsToken, loopback };
  const metricsServed = () => loopback || live.metricsToken !== undefined;

  const onRequestDone = (info: RequestInfo) => {
    metrics!.request(info.method, info.route, info.status, info.durationMs / 1000);
    const level = info.status >= 500 ? 'error' : 'info';
    if (!logger.enabled(level)) return;
    logger.log(level, 'request', {
      method: info.method, route: info.route, status: info.status, duration_ms: Math.round(info.durationMs * 10) / 10,
      account: info.accountId ?? undefined, client: info.req ? proxy.clientAddress(info.req) : undefined,
    });
  };

  /** The API's address for this request: public_url, else a trusted proxy's forwarded origin, else the bound one. */
  const baseUrlFor = (req: IncomingMessage): string => {
    if (live.publicUrl !== undefined || !proxy.enabled) return serviceConfig.baseUrl;
    const origin = proxy.forwardedOrigin(req);
    return origin ? `${origin}/v1` : serviceConfig.baseUrl;
  };
  // One for the pages and the admin socket: sign-in links and sessions are records in the store.
  const signIn = new WebSignIn(running.store, running.accounts);
  const app = createApp(running, {
    onRequestDone,
    baseUrlFor,
    refuseSubmissions(): SubmissionRefusal {
      if (draining) return { reason: 'shutting_down', retryAfter: SHUTDOWN_RETRY_AFTER };
      return disk.low() ? { reason: 'low_disk_space', retryAfter: LOW_DISK_RETRY_AFTER } : null;
    },
    uploadSpace: disk,
    bodyTimeouts: () => live.bodyTimeouts,
    shutdownSignal: shutdown.signal,
    openApiJson(baseUrl) {
      let text = openApiCache.get(baseUrl);
      if (text === undefined) {
        text = JSON.stringify(buildOpenApi(ROUTES, { serverUrl: baseUrl, version: VERSION }));
        // Base URLs come from the configuration or a trusted proxy: a handful at most.
        if (openApiCache.size < 16) openApiCache.set(baseUrl, text);
      }
      return text;
    },
    extraRoutes: opsRoutes(ops, metricsOnMainPort ? metricsServed : null),
    clientAddress: (req) => proxy.clientAddress(req),
    authFailuresPerMinute: () => live.authFailuresPerMinute,
    serveApi: config.serveApi,
    web: config.serveWeb ? (h3, api) => registerWebFace(h3, {
      system: running,
      signIn,
      clientAddress: (req) => proxy.clientAddress(req),
      publicOrigin: (req) => new URL(baseUrlFor(req)).origin,
      // A proxy serving convd under a path (public_url https://example.com/convd) takes the path off.
      basePath: () => pagesBasePath(live.publicUrl),
      pipeline: api.pipeline,
    }, api) : undefined,
  });
  const http = await startHttpServer(app.listener, config.host, config.port, await readTls(config.tls), config.requestTimeoutMs);
  serviceConfig.baseUrl = baseUrlOf(live.publicUrl ?? http.url);

  let metricsServer: Server | null = null;
  let metricsUrl: string | null = null;
  if (config.metricsListen) {
    const server = metricsListener(ops);
    metricsServer = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.metricsListen!.port, config.metricsListen!.host, () => resolve());
    });
    const address = server.address() as AddressInfo;
    metricsUrl = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
  }
  const admin = await startAdminSocket(config.dataDir, running, signIn);
  // Only now that every address is bound: a start that fails on one (EADDRINUSE) has created no
  // account, so the next start still creates it and shows its key.
  await bootstrapFirstAccount(running.accounts, {
    write: (line) => process.stderr.write(line),
    terminal: process.stderr.isTTY === true,
    dataDir: config.dataDir,
  });
  if (metricsOnMainPort && !metricsServed()) {
    logger.log('warn', 'metrics.not_served', {
      message: `/metrics is not served on ${http.url}: ${config.host} is not a loopback address and no metrics token is set. `
        + 'Set metrics_token (--metrics-token, CONVD_METRICS_TOKEN; SIGHUP applies it) to serve it there behind Authorization: Bearer, '
        + 'or metrics_listen (--metrics-listen 127.0.0.1:9464) to serve it on an address of its own',
    });
  }

  return {
    system: running,
    http,
    url: http.url,
    metricsUrl,
    async close(drainMs) {
      draining = true;
      if (recount) clearInterval(recount);
      const inFlight = running.pool.activeIds();
      // Stops listening at once; connections still in use end with their answer (Connection: close).
      const httpClosed = http.close(drainMs + REQUEST_GRACE_MS);
      // Once the drain is over no conversion ends any more (what still runs is being stopped and
      // re-queued, which on a loaded box can outlast the HTTP grace): requests waiting for one
      // answer with its state then, not when the pool has stopped.
      const answerWaits = setTimeout(() => shutdown.abort(), drainMs);
      await running.pool.stop(drainMs);
      clearTimeout(answerWaits);
      shutdown.abort();
      await httpClosed;
      if (metricsServer) await new Promise<void>((resolve) => metricsServer.close(() => resolve()));
      await admin.close();
      let requeued = 0;
      for (const id of inFlight) if ((await running.store.getConversion(id))?.status === 'queued') requeued++;
      await running.stop(0);
      await releaseLock();
      return { finished: inFlight.length - requeued, requeued };
    },
    async reload(next) {
      const problems: string[] = [];
      serviceConfig.plans = structuredClone(next.plans);
      // The registry holds this very object: change it in place.
      Object.assign(serviceConfig.creditWeights, next.creditWeights);
      for (const engine of Object.keys(serviceConfig.engineTimeoutMs)) delete serviceConfig.engineTimeoutMs[engine];
      Object.assign(serviceConfig.engineTimeoutMs, next.engineTimeoutMs);
      serviceConfig.retentionDays = next.retentionDays;
      serviceConfig.outputCapRatio = next.outputCapRatio;
      serviceConfig.outputCapFloorMb = next.outputCapFloorMb;
      logger.configure(next.logLevel, next.logFormat);
      disk.floorMb = next.diskFloorMb;
      live.bodyTimeouts = { idleMs: next.uploadIdleTimeoutMs, totalMs: next.requestTimeoutMs };
      http.setRequestTimeout(next.requestTimeoutMs);
      proxy.set(next.trustedProxies);
      live.metricsToken = next.metricsToken;
      live.authFailuresPerMinute = next.authFailuresPerMinute;
      if (live.publicUrl !== next.publicUrl) {
        live.publicUrl = next.publicUrl;
        serviceConfig.baseUrl = baseUrlOf(live.publicUrl ?? http.url);
        openApiCache.clear();
      }
      if ((live.tls === null) !== (next.tls === null)) problems.push('switching TLS on or off needs a restart');
      else if (next.tls) {
        try {
          http.setTls((await readTls(next.tls))!);
          live.tls = next.tls;
        } catch (error) {
          problems.push(`TLS files not reloaded: ${error instanceof Error ? error.message : String(error)}`);
        }
      }
      return problems;
    },
  };
}
