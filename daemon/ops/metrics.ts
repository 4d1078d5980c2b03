import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { ConversionRecord } from '../../src/model/conversion.ts';
import type { ConversionStatus } from '../../src/model/status.ts';
import type { DeliveryRecord } from '../../src/store/types.ts';
import { RequestMetrics } from './request-metrics.ts';

/** What the gauges read at scrape time (never on a request's path). */
export interface MetricsSources {
  version: string;
  workers: number;
  engines: string[];
  queueDepth(): number;
  /** Claims this node holds on running conversions (a queue in PostgreSQL); null: a queue in memory. */
  leasesHeld(): number | null;
  /** Engine name of each running conversion. */
  runningEngines(): Promise<string[]>;
  diskFreeBytes(): number | null;
  /** Documents the office engine tried a second way after LibreOffice crashed opening them, by outcome, since start. */
  officeRetries?(): Readonly<Record<'succeeded' | 'failed', number>>;
}

// Request latency: from a cached GET (~0.1 ms) to a `wait=30` that ran out.
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const RUN_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800];
const ENDED = new Set<ConversionStatus>(['succeeded', 'failed', 'cancelled']);
/** How often the event loop's delay (convd_nodejs_eventloop_lag_*) is sampled. */
const EVENT_LOOP_SAMPLE_MS = 100;
/**
 * The methods of the API, and OPTIONS, which browsers send by themselves before a cross-origin
 * request (worth seeing on its own when a web page tries to call the API); the rest are `other`.
 */
const METHOD_LABELS = ['GET', 'HEAD', 'POST', 'DELETE', 'OPTIONS'];

/**
 * The daemon's Prometheus metrics (prom-client, on a registry of its own; the two per-request
 * metrics in RequestMetrics, rendered after them). Counters and histograms are updated in O(1)
 * per event; gauges of state (queue, running, disk) are read when scraped.
 */
export class DaemonMetrics {
  readonly registry = new Registry();
  private readonly requests = new RequestMetrics({
    countName: 'convd_http_requests_total',
    countHelp: 'HTTP requests answered, by route pattern and status.',
    latencyName: 'convd_http_request_duration_seconds',
    latencyHelp: 'Time to answer an HTTP request (a download: until its headers), by route pattern.',
    buckets: LATENCY_BUCKETS,
    methods: METHOD_LABELS,
  });
  private readonly submitted: Counter;
  private readonly ended: Counter<'status'>;
  private readonly failures: Counter<'code'>;
  private readonly expired: Counter;
  private readonly runTime: Histogram<'engine' | 'status'>;
  private readonly webhookAttempts: Counter<'outcome'>;
  private resultsBytes = 0;

  constructor(sources: MetricsSources) {
    const registers = [this.registry];
    // The event loop's delay is sampled every EVENT_LOOP_SAMPLE_MS, not prom-client's 10 ms: a
    // timer that fires 100 times a second took an idle daemon 9-12 ms of CPU a second (a third of
    // that at 100 ms), and woke it that often while it waited for an engine.
    collectDefaultMetrics({ register: this.registry, prefix: 'convd_', eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
    new Gauge({ name: 'convd_build_info', help: 'Always 1; the version is a label.', labelNames: ['version'], registers }).set({ version: sources.version }, 1);
    new Gauge({ name: 'convd_workers', help: 'Conversions that may run at once.', registers }).set(sources.workers);
    this.submitted = new Counter({ name: 'convd_conversions_submitted_total', help: 'Conversions created (idempotent replays not counted).', registers });
    this.ended = new Counter({ name: 'convd_conversions_ended_total', help: 'Conversions that reached an end state, by status (succeeded, failed, cancelled).', labelNames: ['status'], registers });
    this.failures = new Counter({ name: 'convd_conversion_failures_total', help: 'Failed conversions by error code.', labelNames: ['code'], registers });
    this.expired = new Counter({ name: 'convd_results_expired_total', help: 'Results deleted at expiry or by DELETE.', registers });
    this.runTime = new Histogram({ name: 'convd_conversion_duration_seconds', help: 'From start to end state of a conversion that ran, by engine and end status.', labelNames: ['engine', 'status'], buckets: RUN_BUCKETS, registers });
    this.webhookAttempts = new Counter({ name: 'convd_webhook_attempts_total', help: 'Webhook delivery attempts by outcome: delivered, retrying (failed, another attempt is scheduled), failed (failed, given up).', labelNames: ['outcome'], registers });
    for (const status of ENDED) this.ended.inc({ status }, 0);
    for (const outcome of ['delivered', 'retrying', 'failed']) this.webhookAttempts.inc({ outcome }, 0);

    new Gauge({ name: 'convd_queue_depth', help: 'Conversions waiting for a worker (with several nodes: in the whole cluster).', registers, collect() { this.set(sources.queueDepth()); } });
    if (sources.leasesHeld() !== null) {
      new Gauge({ name: 'convd_leases_held', help: 'Running conversions this node holds a lease on (renewed every third of lease_timeout).', registers, collect() { this.set(sources.leasesHeld() ?? 0); } });
    }
    new Gauge({
      name: 'convd_conversions_running', help: 'Conversions processing now, by engine: their engine running, or (at most as many again as workers) their result being filed.', labelNames: ['engine'], registers,
      async collect() {
        const counts = Object.fromEntries(sources.engines.map((engine) => [engine, 0]));
        for (const engine of await sources.runningEngines()) counts[engine] = (counts[engine] ?? 0) + 1;
        for (const [engine, count] of Object.entries(counts)) this.set({ engine }, count);
      },
    });
    const retries = sources.officeRetries;
    if (retries) {
      // Counted in the engine (src/engines/office/retries.ts); brought over at each scrape.
      const seen = { succeeded: 0, failed: 0 };
      const retried = new Counter({
        name: 'convd_office_retries_total', help: 'Office documents tried a second way (a LibreOffice of their own) after LibreOffice crashed opening them, by outcome: succeeded, failed.', labelNames: ['outcome'], registers,
        collect() {
          const now = retries();
          for (const outcome of ['succeeded', 'failed'] as const) {
            this.inc({ outcome }, now[outcome] - seen[outcome]);
            seen[outcome] = now[outcome];
          }
        },
      });
      for (const outcome of ['succeeded', 'failed']) retried.inc({ outcome }, 0);
    }
    const results = () => this.resultsBytes;
    new Gauge({ name: 'convd_results_bytes', help: 'Disk used by result files that can still be downloaded.', registers, collect() { this.set(results()); } });
    new Gauge({
      name: 'convd_data_dir_free_bytes', help: 'Free space on the data directory\'s file system (for an unprivileged user).', registers,
      collect() {
        const free = sources.diskFreeBytes();
        if (free !== null) this.set(free);
      },
    });
  }

  /**
   * Routes are patterns, methods outside METHOD_LABELS count as `other`, statuses are few: the
   * label sets stay few (unmatched paths share one route) whatever clients send.
   */
  request(method: string, route: string, status: number, seconds: number): void {
    this.requests.observe(method, route, status, seconds);
  }

  /** Starting figure of `convd_results_bytes` (the sum over downloadable results at start). */
  setResultsBytes(bytes: number): void {
    this.resultsBytes = bytes;
  }

  transition(record: ConversionRecord, from: ConversionStatus | null, engine: string): void {
    if (from === null) this.submitted.inc();
    if (record.status === 'succeeded') this.resultsBytes += record.result?.size ?? 0;
    if (from === 'succeeded') {
      this.resultsBytes -= record.result?.size ?? 0;
      if (record.status === 'expired') this.expired.inc();
    }
    if (!ENDED.has(record.status)) return;
    this.ended.inc({ status: record.status });
    if (record.status === 'failed' && record.error) this.failures.inc({ code: record.error.code });
    if (record.started_at && record.finished_at) {
      const seconds = (Date.parse(record.finished_at) - Date.parse(record.started_at)) / 1000;
      if (seconds >= 0) this.runTime.observe({ engine, status: record.status }, seconds);
    }
  }

  deliveryAttempt(record: DeliveryRecord): void {
    const last = record.attempts[record.attempts.length - 1];
    const success = last?.status_code !== null && last?.status_code !== undefined && last.status_code >= 200 && last.status_code < 300;
    const outcome = success ? 'delivered' : record.status === 'pending' ? 'retrying' : 'failed';
    this.webhookAttempts.inc({ outcome });
  }

  async render(): Promise<{ contentType: string; body: string }> {
    const registry = await this.registry.metrics();
    return { contentType: this.registry.contentType, body: `${registry.endsWith('\n') ? registry : `${registry}\n`}${this.requests.render()}` };
  }
}
