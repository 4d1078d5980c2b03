import type { RequestInfo, RequestReport } from '../http/pipeline.ts';
import type { Logger } from '../log.ts';
import type { DaemonMetrics } from './metrics.ts';
import type { ProxyTrust } from './proxy-trust.ts';

/** What the daemon does with each answered request: counts it, and logs it (5xx as errors). */
export function requestReport(metrics: DaemonMetrics, logger: Logger, proxy: ProxyTrust): RequestReport {
  return (info: RequestInfo) => {
    metrics.request(info.method, info.route, info.status, info.durationMs / 1000);
    const level = info.status >= 500 ? 'error' : 'info';
    if (!logger.enabled(level)) return;
    logger.log(level, 'request', {
      method: info.method, route: info.route, status: info.status, duration_ms: Math.round(info.durationMs * 10) / 10,
      account: info.accountId ?? undefined, client: info.req ? proxy.clientAddress(info.req) : undefined,
    });
  };
}
