import type { IncomingMessage } from 'node:http';
import { once } from 'node:events';
import { HTTPResponse, type H3Event } from 'h3';
import { ApiError } from '../../src/errors/api-error.ts';
import type { Language } from '../../src/errors/messages.ts';
import type { ConversionRecord } from '../../src/model/conversion.ts';
import { BYTES_PER_MB } from '../../src/model/plan.ts';
import { END_STATUSES } from '../../src/model/status.ts';
import type { Caller } from '../../src/service/accounts.ts';
import type { ConversionSystem } from '../../src/service/system.ts';
import type { CreateRequestInput } from '../../src/service/create-request.ts';
import { readCreateRequest } from '../http/body.ts';
import type { BodyTimeouts } from '../http/body-deadline.ts';
import { wasHead } from '../http/head.ts';
import { parseRange } from '../http/range.ts';
import { resultResponse } from '../http/result-download.ts';
import { refusalError, type SubmissionRefusal } from '../http/refusal.ts';
import { json } from '../http/respond.ts';
import { admitUpload } from '../http/upload-admission.ts';
import type { UploadSpace } from '../ops/disk-space.ts';
import type { KeyedOperationId, PublicOperationId } from './table.ts';

export interface Context {
  event: H3Event;
  caller: Caller;
  language: Language;
  nodeReq: IncomingMessage;
  /** Public base ending in /v1 for links and Location, as this caller reached the daemon. */
  baseUrl: string;
}

export type RouteHandler = (context: Context) => Promise<Response | HTTPResponse>;
export type PublicHandler = (context: { event: H3Event; baseUrl: string }) => Promise<Response | HTTPResponse>;

export interface HandlerDeps {
  system: ConversionSystem;
  refuseSubmissions: () => SubmissionRefusal;
  /** Meters uploads against the disk floor. */
  uploadSpace: UploadSpace;
  /** The body time limits in force (read per request: SIGHUP changes them). */
  bodyTimeouts: () => BodyTimeouts;
  /** Aborted at shutdown, once no conversion will end any more: `wait` requests answer at once. */
  shutdownSignal: AbortSignal;
  /** The OpenAPI document for a base URL, serialized. */
  openApiJson: (baseUrl: string) => string;
}

const MAX_WAIT_SECONDS = 30;

/** The handler of every operation of daemon/routes/table.ts; the compiler checks none is missing. */
export function v1Handlers(deps: HandlerDeps): { keyed: Record<KeyedOperationId, RouteHandler>; open: Record<PublicOperationId, PublicHandler> } {
  const { system, shutdownSignal } = deps;
  const { conversions, accounts } = system;

  /** The request's own abort signal (client gone) joined with the shutdown: only when waiting. */
  const waitSignal = (event: H3Event) => AbortSignal.any([event.req.signal, shutdownSignal]);

  const conversionAnswer = (record: ConversionRecord, baseUrl: string) => {
    const view = conversions.publicView(record, baseUrl);
    return END_STATUSES.has(record.status) ? json(200, view) : json(202, view, { location: view.links.self });
  };

  const create: RouteHandler = async ({ caller, nodeReq, event, baseUrl }) => {
    const refusal = deps.refuseSubmissions();
    if (refusal) throw refusalError(refusal);
    const plan = conversions.config.plans[caller.account.plan];
    const key = event.req.headers.get('idempotency-key') ?? undefined;
    const limits = { maxFileBytes: plan.max_upload_mb * BYTES_PER_MB, maxFileMb: plan.max_upload_mb };
    const timeouts = deps.bodyTimeouts();
    const upload = await admitUpload(conversions, deps.uploadSpace, caller.account, nodeReq, limits, key, timeouts.idleMs);
    let input: CreateRequestInput;
    try {
      input = await readCreateRequest(nodeReq, {
        ...limits,
        spoolPath: () => system.blobs.spoolPath(),
        discard: (path) => system.blobs.discardSpool(path),
        onFileBytes: upload?.onFileBytes,
        timeouts,
      }, key);
    } catch (error) {
      upload?.hold?.release();
      // The parser removed what it had spooled.
      await upload?.meter.end(true);
      throw error;
    }
    await upload?.meter.end(false);
    const outcome = await conversions.create(caller.account, input, upload?.hold ?? undefined);
    // `event.req.signal` builds an AbortSignal wired to the socket (~5 us): only when it is used.
    const record = await conversions.answer(outcome, outcome.wait > 0 ? waitSignal(event) : undefined);
    return conversionAnswer(record, baseUrl);
  };

  const id = (event: H3Event) => event.context.params?.id ?? '';

  const keyed: Record<KeyedOperationId, RouteHandler> = {
    createConversion: create,
    convert: create,

    async listConversions({ caller, event, baseUrl }) {
      const query = new URL(event.req.url).searchParams;
      const page = await conversions.list(caller.account, {
        status: query.get('status') ?? undefined,
        cursor: query.get('cursor') ?? undefined,
        limit: query.get('limit') ?? undefined,
      }, baseUrl);
      return json(200, page);
    },

    async getConversion({ caller, event, baseUrl }) {
      const record = await conversions.get(caller.account, id(event));
      // The hot read of every poller: parse a query only when there is one.
      const queryAt = event.req.url.indexOf('?');
      const rawWait = queryAt === -1 ? null : new URLSearchParams(event.req.url.slice(queryAt + 1)).get('wait');
      let wait = 0;
      if (rawWait !== null && rawWait !== '') {
        wait = /^\d+$/.test(rawWait) ? Number(rawWait) : NaN;
        if (!(wait >= 0 && wait <= MAX_WAIT_SECONDS)) {
          throw new ApiError('validation_failed', { details: { fields: { wait: { reason: 'out_of_range', params: { min: 0, max: MAX_WAIT_SECONDS } } } } });
        }
      }
      const current = await conversions.waitForEnd(record, wait, wait > 0 ? waitSignal(event) : undefined);
      return json(200, conversions.publicView(current, baseUrl));
    },

    async deleteConversion({ caller, event, baseUrl }) {
      const record = await conversions.delete(caller.account, id(event));
      return json(200, conversions.publicView(record, baseUrl));
    },

    async downloadResult({ caller, event, nodeReq }) {
      const headOnly = wasHead(nodeReq);
      const download = await conversions.download(caller.account, id(event), { checkFile: headOnly });
      // Range is defined for GET only (RFC 9110, 14.2): a HEAD is told the whole file.
      const range = headOnly ? null : parseRange(event.req.headers.get('range'), download.size);
      return resultResponse(download, range, headOnly);
    },

    async listFormats() {
      return json(200, conversions.listFormats());
    },

    async getFormat({ caller, event }) {
      return json(200, conversions.formatDetails(caller.account, decodeURIComponent(event.context.params?.source ?? '')));
    },

    async getAccount({ caller }) {
      return json(200, await accounts.view(caller.account));
    },
  };

  const open: Record<PublicOperationId, PublicHandler> = {
    async getOpenApi({ baseUrl }) {
      return new HTTPResponse(deps.openApiJson(baseUrl), {
        status: 200,
        headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'public, max-age=300' },
      });
    },
  };
  return { keyed, open };
}
