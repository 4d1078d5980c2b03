import type { RequestInfo, RequestReport } from '../http/pipeline.ts';
import type { Logger } from '../log.ts';
import type { LogLevel } from '../config.ts';
import type { DaemonMetrics } from './metrics.ts';
import type { ProxyTrust } from './proxy-trust.ts';

/** The route a client polls while it waits for a conversion. */
const POLLED_ROUTE = '/v1/conversions/:id';

/**
 * The level of a request's line: 5xx an error; a poll of a conversion that was answered (GET or
 * HEAD, below 400) debug, since a waiting client repeats it many times a second and each line
 * says nothing the last did not (the metrics count every one); every other request info.
 */
function levelOf(info: RequestInfo): LogLevel {
  if (info.status >= 500) return 'error';
  if (info.status < 400 && info.route === POLLED_ROUTE && (info.method === 'GET' || info.method === 'HEAD')) return 'debug';
  return 'info';
}

/** What the daemon does with each answered request: counts it, and logs it (5xx as errors, answered polls at debug). */
export function requestReport(metrics: DaemonMetrics, logger: Logger, proxy: ProxyTrust): RequestReport {
  return (info: RequestInfo) => {
    metrics.request(info.method, info.route, info.status, info.durationMs / 1000);
    const level = levelOf(info);
    if (!logger.enabled(level)) return;
    logger.log(level, 'request', {
      method: info.method, route: info.route, status: info.status, duration_ms: Math.round(info.durationMs * 10) / 10,
      account: info.accountId ?? undefined, client: info.req ? proxy.clientAddress(info.req) : undefined,
    });
  };
}
