/**
 * The two metrics every request updates, `convd_http_requests_total` (method, route, status) and
 * `convd_http_request_duration_seconds` (method, route), kept in plain counters and rendered in the
 * Prometheus text format at scrape time. prom-client, which keeps every other metric, checks and
 * hashes the labels on each `observe()` even through a child made by `labels()`: measured under
 * `npm run bench -- get-throughput`, 2-3 us of the daemon's 20 us per GET, a tenth of its cost.
 */

interface RouteStats {
  /** Observations per bucket (not cumulative), one per bound; above the last only in `count`. */
  buckets: number[];
  sum: number;
  count: number;
  statuses: Map<number, number>;
}

export interface RequestMetricsOptions {
  countName: string;
  countHelp: string;
  latencyName: string;
  latencyHelp: string;
  /** Upper bounds in seconds, ascending. */
  buckets: number[];
  /** Methods counted under their own name; any other is counted as `other`. */
  methods: readonly string[];
}

export class RequestMetrics {
  /** method -> route -> stats: two map lookups per request, no key string built. */
  private readonly byMethod = new Map<string, Map<string, RouteStats>>();
  private readonly methods: ReadonlySet<string>;

  constructor(private readonly options: RequestMetricsOptions) {
    this.methods = new Set(options.methods);
  }

  observe(method: string, route: string, status: number, seconds: number): void {
    // Node parses 35 methods (PROPFIND, MKCOL, M-SEARCH, ...): each would be a label value of
    // its own on every route it is sent to, for anyone to multiply the series with.
    const label = this.methods.has(method) ? method : 'other';
    let routes = this.byMethod.get(label);
    if (!routes) this.byMethod.set(label, (routes = new Map()));
    let stats = routes.get(route);
    if (!stats) routes.set(route, (stats = { buckets: this.options.buckets.map(() => 0), sum: 0, count: 0, statuses: new Map() }));
    stats.statuses.set(status, (stats.statuses.get(status) ?? 0) + 1);
    stats.count += 1;
    // performance.now() never goes back; should a duration ever not be a time, it counts as 0
    // rather than poisoning the sum or landing above the last bound.
    const value = seconds >= 0 && seconds !== Infinity ? seconds : 0;
    stats.sum += value;
    const bounds = this.options.buckets;
    for (let index = 0; index < bounds.length; index++) {
      if (value <= bounds[index]!) {
        stats.buckets[index]! += 1;
        break;
      }
    }
  }

  /** Both metric families in the text exposition format (version 0.0.4), each line ending in \n. */
  render(): string {
    const { countName, countHelp, latencyName, latencyHelp, buckets } = this.options;
    const counts: string[] = [`# HELP ${countName} ${escapeHelp(countHelp)}`, `# TYPE ${countName} counter`];
    const latency: string[] = [`# HELP ${latencyName} ${escapeHelp(latencyHelp)}`, `# TYPE ${latencyName} histogram`];
    for (const [method, routes] of this.byMethod) {
      for (const [route, stats] of routes) {
        const labels = `method="${escapeLabel(method)}",route="${escapeLabel(route)}"`;
        for (const [status, count] of stats.statuses) counts.push(`${countName}{${labels},status="${status}"} ${count}`);
        let cumulative = 0;
        for (const [index, bound] of buckets.entries()) {
          cumulative += stats.buckets[index]!;
          latency.push(`${latencyName}_bucket{le="${bound}",${labels}} ${cumulative}`);
        }
        latency.push(`${latencyName}_bucket{le="+Inf",${labels}} ${stats.count}`);
        latency.push(`${latencyName}_sum{${labels}} ${stats.sum}`);
        latency.push(`${latencyName}_count{${labels}} ${stats.count}`);
      }
    }
    return `${counts.join('\n')}\n${latency.join('\n')}\n`;
  }
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function escapeHelp(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}
