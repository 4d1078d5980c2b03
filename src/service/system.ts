import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { availableParallelism } from 'node:os';
import { defaultEngines } from '../engines/catalog.ts';
import { engineSettings, probedAtStart } from '../engines/configuration.ts';
import { enginesFromFindings, formatFingerprint, type FoundEngines } from '../engines/findings-cache.ts';
import { EngineHost } from '../engines/host/engine-host.ts';
import type { KnownEngine } from '../engines/lazy.ts';
import type { Engine } from '../engines/types.ts';
import { unpackZipForMerge } from '../inputs/zip-merge.ts';
import { ZIP_MERGE_LIMITS } from './create-request.ts';
import { FormatRegistry } from '../formats/registry.ts';
import { MemoryJobSource, type JobOwner, type JobSource } from '../queue/job-source.ts';
import { WorkerPool } from '../queue/worker-pool.ts';
import { LocalBlobStore, type BlobStore } from '../store/blob-store.ts';
import { observeStore, type StoreObserver } from '../store/observed-store.ts';
import { UNLIMITED_ROOM, type DiskRoom } from '../store/disk-room.ts';
import type { Store } from '../store/types.ts';
import type { PostgresStore } from '../store/postgres/postgres-store.ts';
import type { ConversionRecord } from '../model/conversion.ts';
import type { AccountService } from './accounts.ts';
import type { ServiceConfig } from './config.ts';
import { ConversionService } from './conversion-service.ts';
import { createRunner, type RunnerLog } from './runner.ts';
import type { HelperLifecycle } from '../engines/process/supervisor.ts';
import { openStore } from './open-store.ts';
import { storeServices } from './store-services.ts';
import type { DeliveryLog } from './deliveries.ts';
import type { MaintenanceSwitch } from './maintenance.ts';
import { PeerSignals } from './peer-signals.ts';
import type { RateLimiter } from './rate-limiter.ts';
import type { FailureBuckets } from './failure-buckets.ts';
import { SharedFailureBuckets, SharedRateLimiter } from './shared-rate-limiter.ts';
import { WebhookDeliverer } from '../webhooks/deliverer.ts';
import { RETRY_WAITS_MS } from '../webhooks/schedule.ts';

export interface SystemOptions {
  dataDir: string;
  /** PostgreSQL holds the store. */
  databaseUrl?: string | null;
  /**
   * The store's hold on the database was lost (PostgreSQL restarted or dropped the node's
   * connection): another daemon could now take it, so this one should stop (the daemon drains).
   */
  onStoreLost?: (error: Error) => void;
  /** How long a claim on a running conversion lasts without renewal (PostgreSQL's queue). */
  leaseMs?: number;
  /** An S3-compatible bucket holds inputs and results (`s3://bucket/prefix?…`); the data dir keeps only work in progress. */
  blobUrl?: string | null;
  config: ServiceConfig;
  workers?: number;
  /**
   * Places beside the workers for light accounts with nothing running (WorkerPool's quick lane);
   * default as many as the workers.
   */
  quickLane?: number;
  allowInsecureCallbacks?: boolean;
  engines?: Engine[];
  log?: RunnerLog;
  /** Told of every conversion state change and webhook attempt (the daemon's logs and metrics). */
  observer?: StoreObserver;
  /** A store in memory only, gone with the process (the CLI's in-process runs). */
  ephemeralStore?: boolean;
  /** The room left above the data dir's disk floor (the daemon's DiskSpace); none kept when unset. */
  diskRoom?: DiskRoom;
  /**
   * A file that keeps what the engines' probes found between starts (engines/findings-cache.ts):
   * with current findings the engines are not probed, and each loads with its first conversion.
   * Unset: every engine is probed at every start.
   */
  findingsCache?: string;
}

/**
 * A conversion found running after a crash is run once more; found so again, it fails with
 * `interrupted`: an input that takes the service down cannot do it forever (a systemd restart
 * loop would otherwise run it again at every start).
 */
const RETRIES_AFTER_CRASH = 1;

/** The whole core wired together: store, blobs, registry, services, queue and worker pool. */
export interface ConversionSystem {
  store: Store;
  blobs: BlobStore;
  registry: FormatRegistry;
  accounts: AccountService;
  /** The switch that turns /v1 off (503 api_disabled) while it is on. */
  maintenance: MaintenanceSwitch;
  /** Webhook deliveries to read (the operator's listing, an account's own). */
  deliveries: DeliveryLog;
  conversions: ConversionService;
  pool: WorkerPool;
  /** Conversion ids waiting for a worker (its size is the queue depth). */
  queue: JobSource;
  webhooks: WebhookDeliverer;
  /** Several nodes: requests per minute counted in the shared database (else each process counts its own). */
  rateLimiter?: RateLimiter;
  /** Several nodes: failed sign-ins counted in the shared database (else each process counts its own). */
  failureBuckets?: FailureBuckets;
  /** Re-queues interrupted work, starts the workers and the expiry sweeper. */
  start(): Promise<void>;
  /** Stops the workers (running work gets `drainMs`, then goes back to the queue) and flushes. */
  stop(drainMs?: number): Promise<void>;
}

export async function openSystem(options: SystemOptions): Promise<ConversionSystem> {
  const { config } = options;
  await mkdir(options.dataDir, { recursive: true, mode: 0o700 });
  const log = options.log ?? (() => undefined);
  // Set once the service exists: what to do with a dead node's running conversion.
  let takeOver: (id: string) => Promise<void> = async () => undefined;
  let ownerOf: (account: string) => Promise<JobOwner | undefined> = async () => undefined;
  const { store: opened, queue, database, shared, node } = await openStoreAndQueue(options, log, {
    takeOver: (id) => takeOver(id),
    ownerOf: (account) => ownerOf(account),
  });
  const store: Store = options.observer ? observeStore(opened, options.observer) : opened;
  const blobs = await openBlobs(options);
  const workers = options.workers ?? availableParallelism();
  const quickLane = workers > 0 ? options.quickLane ?? workers : 0;
  // A quick job may move to the workers' count and free its place for another: two runs each.
  const quickRuns = 2 * quickLane;
  const { engines, save } = options.engines
    ? { engines: options.engines, save: null }
    : await catalogEngines(options, workers, quickRuns, log);
  const registry = await FormatRegistry.create(engines, config.creditWeights);
  await save?.();
  const { accounts, maintenance, deliveries } = storeServices(store, config);
  const conversions = new ConversionService(store, blobs, registry, accounts, config, queue, {
    allowInsecureCallbacks: options.allowInsecureCallbacks ?? false,
    unpackZip: (path) => unpackZipForMerge(path, () => blobs.spoolPath(), ZIP_MERGE_LIMITS),
  });
  conversions.diskRoom = options.diskRoom ?? UNLIMITED_ROOM;
  const runner = createRunner(conversions, log, quickRuns);
  const pool = new WorkerPool(queue, workers, runner, (id, error) =>
    log('conversion.worker_error', { id, error: error instanceof Error ? error.message : String(error) }),
  { places: quickLane });
  conversions.pool = pool;
  const peers = database && shared ? new PeerSignals(database, conversions, pool, log) : null;

  const webhooks = new WebhookDeliverer({
    store,
    secretFor: async (accountId) => (await store.getAccount(accountId))?.webhook_secret ?? '',
    allowInsecure: options.allowInsecureCallbacks ?? false,
    scheduleScale: config.webhookScheduleScale,
    timeoutMs: config.webhookTimeoutMs,
    ...(shared && node ? { shared: { node, claimMs: options.leaseMs ?? 30_000 } } : {}),
    log: {
      info: (message, fields) => log('webhook.info', { message, ...fields }),
      warn: (message, fields) => log('webhook.warn', { message, ...fields }),
      error: (message, fields) => log('webhook.error', { message, ...fields }),
    },
  });
  const deliver = (record: ConversionRecord) => {
    if (!record.callback_url || (record.status !== 'succeeded' && record.status !== 'failed')) return;
    void webhooks.enqueue({
      conversionId: record.id,
      accountId: record.account_id,
      url: record.callback_url,
      event: record.status === 'succeeded' ? 'conversion.succeeded' : 'conversion.failed',
      data: conversions.publicView(record),
    }).catch((error: unknown) => log('webhook.error', { id: record.id, error: String(error) }));
  };
  conversions.events.subscribe(deliver);
  let sweeper: NodeJS.Timeout | null = null;

  /** A conversion found running whose runner died (a crash of this box, or of another node): again (true), or failed. */
  async function recoverInterrupted(record: ConversionRecord, into: Store = store): Promise<boolean> {
    const inputThere = record.input.kind === 'url' || record.input_bytes !== undefined || (await blobs.exists('inputs', record.id));
    const interruptions = (record.interruptions ?? 0) + 1;
    if (inputThere && interruptions > RETRIES_AFTER_CRASH) {
      await conversions.finish(record, {
        status: 'failed', credits: 0, interruptions,
        error: { code: 'interrupted', message: 'The service stopped unexpectedly while running this conversion, twice; it is not tried again.' },
      }, into);
      log('conversion.interrupted', { id: record.id, interruptions });
      return false;
    }
    if (inputThere) {
      await into.updateConversion(record.id, { status: 'queued', progress: null, started_at: null, interruptions });
      log('conversion.requeued', { id: record.id, interruptions });
      return true;
    }
    await conversions.finish(record, {
      status: 'failed', credits: 0,
      error: { code: 'internal_error', message: 'The input was lost when the service stopped; submit the conversion again.' },
    }, into);
    return false;
  }
  takeOver = async (id) => {
    const requeued = await store.exclusive(`conversion:${id}`, async (tx) => {
      const record = await tx.getConversion(id);
      if (!record || (record.status !== 'fetching' && record.status !== 'processing')) return false;
      return recoverInterrupted(record, tx);
    });
    if (requeued) queue.push(id);
  };
  ownerOf = async (accountId) => {
    const account = await store.getAccount(accountId);
    return account ? conversions.jobOwner(account) : undefined;
  };

  async function recover(): Promise<void> {
    await blobs.clearScratch();
    // Several nodes: what runs elsewhere is theirs; a dead node's work comes back through its leases.
    const interrupted = shared ? [] : await store.conversionsWithStatus(['fetching', 'processing']);
    for (const record of interrupted) await recoverInterrupted(record);
    if (!shared) await sweepOrphans();
    await store.flush();
    for (const record of await store.conversionsWithStatus(['queued'])) {
      queue.push(record.id, await ownerOf(record.account_id));
    }
    // A crash between an end state and its delivery record: enqueue is idempotent per
    // conversion and event (in the store, across nodes), so offering every recent end state
    // again sends nothing twice. Only the recent ends are read, not the whole history.
    const horizon = new Date(Date.now() - RETRY_WAITS_MS.reduce((a, b) => a + b, 0) * config.webhookScheduleScale).toISOString();
    for (const record of await store.conversionsEndedSince(horizon, ['succeeded', 'failed'])) {
      if (record.callback_url) deliver(record);
    }
  }

  /**
   * Files that no conversion needs any more are leftovers of a crash between two steps. Only
   * where this daemon is alone with its files: with several nodes, another one's upload may be
   * in the bucket a moment before its conversion is in the database.
   */
  async function sweepOrphans(): Promise<void> {
    const needsInput = new Set((await store.conversionsWithStatus(['queued'])).map((r) => r.id));
    const orphanInputs = (await blobs.list('inputs')).filter((id) => !needsInput.has(id));
    for (const id of orphanInputs) await blobs.delete('inputs', id);
    const hasResult = new Set((await store.conversionsWithStatus(['succeeded'])).map((r) => r.id));
    const orphanResults = (await blobs.list('results')).filter((id) => !hasResult.has(id));
    for (const id of orphanResults) await blobs.delete('results', id);
    if (orphanInputs.length + orphanResults.length > 0) log('sweep.orphans', { inputs: orphanInputs.length, results: orphanResults.length });
  }

  return {
    store, blobs, registry, accounts, maintenance, deliveries, conversions, pool, queue, webhooks,
    ...(database && shared ? { rateLimiter: new SharedRateLimiter(database), failureBuckets: new SharedFailureBuckets(database) } : {}),
    async start() {
      // A queue in the database listens and forgets its dead predecessor's leases before recovery re-queues.
      await queue.start?.();
      await peers?.start();
      await recover();
      await webhooks.start();
      await conversions.sweep();
      pool.start();
      sweeper = setInterval(() => void conversions.sweep().catch((error: unknown) => log('sweep.error', { error: String(error) })), config.sweepIntervalMs);
      sweeper.unref();
    },
    async stop(drainMs = 0) {
      if (sweeper) clearInterval(sweeper);
      await pool.stop(drainMs);
      await queue.stop?.();
      await peers?.stop();
      await registry.close();
      await webhooks.stop();
      await store.close();
    },
  };
}

/** A helper's lifecycle event as its log line's fields. */
function lifecycleFields(event: HelperLifecycle): Record<string, unknown> {
  switch (event.type) {
    case 'started':
      return { pid: event.pid, ms: event.ms };
    case 'ended':
      return { pid: event.pid, tasks: event.tasks, why: event.why, code: event.exit.code, signal: event.exit.signal };
    case 'unsandboxed':
      return { why: event.why };
  }
}

/**
 * The catalog's engines, from the findings of an earlier start when `findingsCache` holds current
 * ones (nothing probed, nothing loaded), else probed by the registry; their findings are then
 * written for the next start. An engine that keeps helpers warm from the start (office_warm) is
 * always probed: its probe starts them.
 */
async function catalogEngines(options: SystemOptions, workers: number, quickRuns: number, log: RunnerLog): Promise<FoundEngines> {
  const { config } = options;
  // Every long-running helper's start and end goes to the log: engine hosts, LibreOffice instances, browsers.
  const onLifecycle = (event: HelperLifecycle) => log(`${event.helper === 'engine-host' ? 'engine_host' : event.helper}.${event.type}`, lifecycleFields(event));
  const settings = { ...engineSettings(config, { quickRuns }), onLifecycle };
  const host = new EngineHost({
    processes: workers + quickRuns,
    spare: quickRuns > 0,
    memoryLimitMb: config.engineMemoryMb,
    onLifecycle,
  });
  const make = (known: ReadonlyMap<string, KnownEngine>) => defaultEngines(settings, known, host);
  if (!options.findingsCache) return { engines: make(new Map()), save: null };
  return enginesFromFindings({
    path: options.findingsCache,
    fingerprint: () => formatFingerprint(process.env, JSON.stringify({ settings, engineMemoryMb: config.engineMemoryMb, workers, quickRuns })),
    make,
    probeAlways: probedAtStart(settings),
  });
}

/**
 * The store the options name and the queue that goes with it: PostgreSQL and its conversions
 * table as the queue (loaded only then), or lowdb files under the data dir and a queue in memory.
 * With a bucket too, several daemons may share them (`shared`); without one, files are this
 * box's and the database takes one daemon.
 */
async function openStoreAndQueue(
  options: SystemOptions,
  log: RunnerLog,
  late: { takeOver: (id: string) => Promise<void>; ownerOf: (account: string) => Promise<JobOwner | undefined> },
): Promise<{ store: Store; queue: JobSource; database: PostgresStore | null; shared: boolean; node: string | null }> {
  const shared = Boolean(options.databaseUrl && options.blobUrl);
  // The data dir's: restarted on it, the node knows the leases it held as its own.
  const node = options.databaseUrl ? await (await import('../queue/node-id.ts')).nodeIdIn(options.dataDir) : null;
  // Held for as long as the daemon runs: shared by the nodes of a cluster, alone without a
  // bucket (and by `convd store import`), so neither starts beside the other.
  const { store, database } = await openStore({ dataDir: options.dataDir, databaseUrl: options.databaseUrl, ephemeral: options.ephemeralStore }, {
    role: 'daemon',
    cluster: shared,
    onConnectionLost: (error) => {
      options.log?.('store.connection_lost', { error: error.message });
      options.onStoreLost?.(error);
    },
  });
  if (!database || node === null) return { store, queue: new MemoryJobSource(), database: null, shared: false, node: null };
  const { PostgresJobSource } = await import('../queue/postgres-job-source.ts');
  const queue = new PostgresJobSource(database, { log, shared, node, onAbandoned: late.takeOver, ownerOf: late.ownerOf, ...(options.leaseMs ? { leaseMs: options.leaseMs } : {}) });
  return { store, queue, database, shared, node: queue.node };
}
/** The files' place the options name: a bucket (the SDK loaded only then), or the data dir. */
async function openBlobs(options: SystemOptions): Promise<BlobStore> {
  if (options.blobUrl) {
    const { S3BlobStore } = await import('../store/s3/s3-blob-store.ts');
    return S3BlobStore.open(options.blobUrl, join(options.dataDir, 'blobs'));
  }
  return LocalBlobStore.open(join(options.dataDir, 'blobs'));
}
