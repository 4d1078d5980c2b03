import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError } from '../../src/errors/api-error.ts';
import { negotiateLanguage } from '../../src/errors/negotiate.ts';
import type { ConversionService } from '../../src/service/conversion-service.ts';
import type { RequestInfo } from './request-info.ts';
import type { Admission } from './admission.ts';
import { reportedMethod } from './head.ts';
import { errorAnswer, JSON_CONTENT_TYPE, type PlainAnswer } from './respond.ts';

const PREFIX = '/v1/conversions/';
/** Conversion ids and anything else a client may send there without percent-encoding. */
const PLAIN_SEGMENT = /^[A-Za-z0-9_-]{1,100}$/;
const ROUTE = '/v1/conversions/:id';

export interface HotReadDeps {
  admit: Admission;
  conversions: ConversionService;
  baseUrlFor: (req: IncomingMessage) => string;
  done?: (info: RequestInfo) => void;
}

/**
 * GET /v1/conversions/{id} without a query string — the request every poller repeats — answered
 * on node:http directly instead of through h3. h3 v2's per-request adapter (a web Request over
 * the Node request, URL parsing, the route chain, the response conversion) alone took about 35 %
 * off a bare node:http server's throughput on a trivial route (`npm run bench -- a`): nearly all
 * of the 40 % the issue allows, before any work of ours. Everything the answer is made of is shared with the h3 route:
 * the same admission (maintenance, key, rate limit, scope), the same service call, the same JSON
 * and error shape; test/api-hot-read.test.ts holds the two paths to byte-identical answers.
 *
 * Returns false, touching nothing, for every other request: those go to h3 (a `?wait=`, an
 * encoded or odd id, another method or path).
 */
export function createHotRead(deps: HotReadDeps): (req: IncomingMessage, res: ServerResponse) => boolean {
  const { admit, conversions, baseUrlFor, done } = deps;
  return (req, res) => {
    const url = req.url;
    if (req.method !== 'GET' || url === undefined || !url.startsWith(PREFIX)) return false;
    const id = url.slice(PREFIX.length);
    if (!PLAIN_SEGMENT.test(id)) return false;
    // Several Authorization headers: node:http keeps the first, srvx joins them; h3's way (401)
    // is the answer, so such a request goes there.
    if (repeatsAuthorization(req.rawHeaders)) return false;
    answer(req, res, id).catch((error: unknown) => {
      // Only a failing log or metrics call or a broken socket gets here: never take the daemon down.
      process.emitWarning(`convd: unexpected error answering GET ${ROUTE}: ${error instanceof Error ? error.stack : String(error)}`);
      res.destroy();
    });
    return true;
  };

  async function answer(req: IncomingMessage, res: ServerResponse, id: string): Promise<void> {
    const started = performance.now();
    const language = negotiateLanguage(req.headers['accept-language']);
    const headers: Record<string, string> = {};
    let accountId: string | null = null;
    let reply: PlainAnswer;
    try {
      const caller = await admit(req.headers.authorization, 'read', headers, req);
      accountId = caller.account.id;
      const record = await conversions.get(caller.account, id);
      headers['content-language'] = language;
      reply = { status: 200, headers: { 'content-type': JSON_CONTENT_TYPE, ...headers }, body: conversions.publicJson(record, baseUrlFor(req)) };
    } catch (error) {
      if (!(error instanceof ApiError)) {
        process.emitWarning(`convd: unexpected error on GET ${ROUTE}: ${error instanceof Error ? error.stack : String(error)}`);
      }
      reply = errorAnswer(error, language, headers);
    }
    // A client that hung up meanwhile: nothing to write to.
    if (!res.destroyed) {
      // With writeHead, node:http no longer computes the length itself (it would send chunks).
      reply.headers['content-length'] = String(Buffer.byteLength(reply.body));
      res.writeHead(reply.status, reply.headers);
      res.end(reply.body);
    }
    done?.({ method: reportedMethod(req, 'GET'), route: ROUTE, status: reply.status, durationMs: performance.now() - started, accountId, req });
  }
}

/** More than one Authorization header (rawHeaders: name, value, name, value, ...; no object built per request as headersDistinct would). */
function repeatsAuthorization(raw: string[]): boolean {
  let seen = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === 13 && name.toLowerCase() === 'authorization' && ++seen > 1) return true;
  }
  return false;
}
