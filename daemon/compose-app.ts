import type { IncomingMessage } from 'node:http';
import type { H3 } from 'h3';
import type { ServiceConfig } from '../src/service/config.ts';
import type { ConversionSystem } from '../src/service/system.ts';
import type { WebSignIn } from '../src/sign-in/web-sign-in.ts';
import { createApp, type DaemonApp, type ExtraRoute, type WebApiBridge } from './app.ts';
import { pagesBasePath } from './base-url.ts';
import type { DaemonConfig } from './config.ts';
import type { LiveSettings, Stopping } from './daemon-parts.ts';
import type { RequestReport } from './http/pipeline.ts';
import type { SubmissionRefusal } from './http/refusal.ts';
import type { ServedOpenApi } from './openapi/served-document.ts';
import { LOW_DISK_RETRY_AFTER, type DiskSpace } from './ops/disk-space.ts';
import type { ProxyTrust } from './ops/proxy-trust.ts';
import { registerWebFace } from './web/routes.ts';

/** Seconds a submission refused at shutdown is told to wait. */
const SHUTDOWN_RETRY_AFTER = 5;

/** What the daemon's HTTP face is made of. */
export interface AppParts {
  system: ConversionSystem;
  config: Pick<DaemonConfig, 'serveApi' | 'serveWeb'>;
  /** Its `baseUrl` is the API's address when neither public_url nor a trusted proxy says otherwise. */
  serviceConfig: ServiceConfig;
  live: LiveSettings;
  proxy: ProxyTrust;
  disk: DiskSpace;
  stopping: Stopping;
  openApi: ServedOpenApi;
  signIn: WebSignIn;
  onRequestDone: RequestReport;
  /** Health, readiness and metrics. */
  extraRoutes: ExtraRoute[];
}

/** The HTTP face: /v1 from the route table, the ops routes and, unless no_web, the web pages. */
export function composeApp(parts: AppParts): DaemonApp {
  const { system, live, proxy, disk, stopping } = parts;
  const baseUrlFor = requestBaseUrl(parts);
  return createApp(system, {
    onRequestDone: parts.onRequestDone,
    baseUrlFor,
    refuseSubmissions: () => submissionRefusal(stopping, disk),
    uploadSpace: disk,
    bodyTimeouts: () => live.bodyTimeouts,
    shutdownSignal: stopping.shutdown.signal,
    openApiJson: (baseUrl) => parts.openApi.text(baseUrl),
    extraRoutes: parts.extraRoutes,
    clientAddress: (req) => proxy.clientAddress(req),
    authFailuresPerMinute: () => live.authFailuresPerMinute,
    serveApi: parts.config.serveApi,
    web: parts.config.serveWeb ? webFace(parts, baseUrlFor) : undefined,
  });
}

/** The API's address for a request: public_url, else a trusted proxy's forwarded origin, else the bound one. */
function requestBaseUrl({ live, proxy, serviceConfig }: AppParts): (req: IncomingMessage) => string {
  return (req) => {
    if (live.publicUrl !== undefined || !proxy.enabled) return serviceConfig.baseUrl;
    const origin = proxy.forwardedOrigin(req);
    return origin ? `${origin}/v1` : serviceConfig.baseUrl;
  };
}

/** Why a submission is refused now, if it is: a stop under way, or the disk below its floor. */
function submissionRefusal(stopping: Stopping, disk: DiskSpace): SubmissionRefusal {
  if (stopping.draining) return { reason: 'shutting_down', retryAfter: SHUTDOWN_RETRY_AFTER };
  return disk.low() ? { reason: 'low_disk_space', retryAfter: LOW_DISK_RETRY_AFTER } : null;
}

function webFace({ system, signIn, proxy, live }: AppParts, baseUrlFor: (req: IncomingMessage) => string) {
  return (h3: H3, api: WebApiBridge) => registerWebFace(h3, {
    system,
    signIn,
    clientAddress: (req) => proxy.clientAddress(req),
    publicOrigin: (req) => new URL(baseUrlFor(req)).origin,
    // A proxy serving convd under a path (public_url https://example.com/convd) takes the path off.
    basePath: () => pagesBasePath(live.publicUrl),
    pipeline: api.pipeline,
  }, api);
}
