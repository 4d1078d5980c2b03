import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { HTTPResponse, type H3Event } from 'h3';
import { sameSecret } from '../../src/service/same-secret.ts';
import { json } from '../http/respond.ts';
import type { ExtraRoute } from '../app.ts';
import type { DaemonMetrics } from './metrics.ts';
import type { Readiness } from './readiness.ts';

function tokenMatches(header: string | null | undefined, token: string): boolean {
  return sameSecret(/^Bearer\s+(\S+)\s*$/i.exec(header ?? '')?.[1] ?? '', token);
}

/** The metrics text, or 401 when a token is configured and the request lacks it. */
async function metricsAnswer(metrics: DaemonMetrics, token: string | undefined, authorization: string | null | undefined): Promise<{ status: number; type: string; body: string }> {
  if (token && !tokenMatches(authorization, token)) {
    return { status: 401, type: 'text/plain; charset=utf-8', body: 'metrics need Authorization: Bearer <metrics token>\n' };
  }
  const { contentType, body } = await metrics.render();
  return { status: 200, type: contentType, body };
}

export interface OpsDeps {
  readiness: Readiness;
  metrics: DaemonMetrics;
  /** Current metrics token (SIGHUP may change it). */
  metricsToken: () => string | undefined;
  /** The API listens on loopback only: whoever reaches it is on this machine. */
  loopback: boolean;
}

/**
 * What /readyz tells beyond ok or failed (free MiB against the floor, engine problems) is for the
 * operator: on loopback, or with the metrics token. Anyone else who reaches an API bound beyond
 * loopback could time a disk fill by it.
 */
function readinessDetails(deps: OpsDeps, authorization: string | null): boolean {
  const token = deps.metricsToken();
  return deps.loopback || (token !== undefined && tokenMatches(authorization, token));
}

/**
 * `/healthz` (the process answers: liveness), `/readyz` (it can take work: readiness, 503 with
 * the failing checks otherwise) and, unless it has an address of its own (`metricsServed`
 * null), `/metrics`, answered while `metricsServed()` holds and like an unknown path otherwise.
 * None needs an API key: a load balancer or Prometheus has none. Outside /v1, so the
 * maintenance switch and the rate limits do not apply.
 */
export function opsRoutes(deps: OpsDeps, metricsServed: (() => boolean) | null): ExtraRoute[] {
  const routes: ExtraRoute[] = [
    { path: '/healthz', handler: async () => json(200, { status: 'ok' }, { 'cache-control': 'no-store' }) },
    {
      path: '/readyz',
      handler: async (event: H3Event) => {
        const report = await deps.readiness.check();
        const checks = readinessDetails(deps, event.req.headers.get('authorization'))
          ? report.checks
          : Object.fromEntries(Object.entries(report.checks).map(([name, check]) => [name, { ok: check.ok }]));
        return json(report.ready ? 200 : 503, { status: report.ready ? 'ready' : 'not_ready', checks }, { 'cache-control': 'no-store' });
      },
    },
  ];
  if (metricsServed) {
    routes.push({
      path: '/metrics',
      served: metricsServed,
      handler: async (event: H3Event) => {
        const answer = await metricsAnswer(deps.metrics, deps.metricsToken(), event.req.headers.get('authorization'));
        return new HTTPResponse(answer.body, { status: answer.status, headers: { 'content-type': answer.type, 'cache-control': 'no-store' } });
      },
    });
  }
  return routes;
}

/** `--metrics-listen`: a server of its own that answers /metrics and nothing else. */
export function metricsListener(deps: OpsDeps) {
  return createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('only GET /metrics here\n');
      return;
    }
    metricsAnswer(deps.metrics, deps.metricsToken(), req.headers.authorization).then(
      (answer) => res.writeHead(answer.status, { 'content-type': answer.type, 'cache-control': 'no-store' }).end(answer.body),
      (error: unknown) => res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end(`${String(error)}\n`),
    );
  });
}
