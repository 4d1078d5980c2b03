import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ConversionService } from '../../src/service/conversion-service.ts';
import type { Admission } from './admission.ts';
import { Exchange, report, settle, warnUnexpected, type FailureRules, type RequestReport } from './pipeline.ts';
import { errorAnswer, JSON_CONTENT_TYPE, type PlainAnswer } from './respond.ts';

const PREFIX = '/v1/conversions/';
/** Conversion ids and anything else a client may send there without percent-encoding. */
const PLAIN_SEGMENT = /^[A-Za-z0-9_-]{1,100}$/;
const ROUTE = '/v1/conversions/:id';

export interface HotReadDeps {
  admit: Admission;
  conversions: ConversionService;
  baseUrlFor: (req: IncomingMessage) => string;
  done?: RequestReport;
}

/** The API's failure as plain parts (errorAnswer is errorResponse byte for byte). */
const HOT_RULES: FailureRules<PlainAnswer> = { failure: (error, exchange) => errorAnswer(error, exchange.language, exchange.headers) };

/**
 * GET /v1/conversions/{id} without a query string — the request every poller repeats — answered
 * on node:http directly instead of through h3. h3 v2's per-request adapter (a web Request over
 * the Node request, URL parsing, the route chain, the response conversion) alone took about 35 %
 * off a bare node:http server's throughput on a trivial route (`npm run bench -- get-throughput`):
 * nearly all of the 40 % the issue allows, before any work of ours. Everything the answer is made
 * of is shared with the h3 route:
 * the same admission (maintenance, key, rate limit, scope), the same service call, the same JSON
 * and error shape, and the same pipeline pieces (pipeline.ts: the Exchange with its timing and
 * language, `settle` for failures and their log, `report`) without the H3Event wrapper around
 * them; test/api-hot-read.test.ts holds the two paths to byte-identical answers.
 *
 * Returns false, touching nothing, for every other request: those go to h3 (a `?wait=`, an
 * encoded or odd id, another method or path).
 */
export function createHotRead(deps: HotReadDeps): (req: IncomingMessage, res: ServerResponse) => boolean {
  const { admit, conversions, baseUrlFor, done } = deps;

  const read = async (id: string, exchange: Exchange): Promise<PlainAnswer> => {
    const { req } = exchange;
    const caller = await admit(req.headers.authorization, 'read', exchange.headers, req);
    exchange.accountId = caller.account.id;
    const record = await conversions.get(caller.account, id);
    return { status: 200, headers: { 'content-type': JSON_CONTENT_TYPE, ...exchange.headers, 'content-language': exchange.language }, body: conversions.publicJson(record, baseUrlFor(req)) };
  };

  const answer = async (req: IncomingMessage, res: ServerResponse, id: string): Promise<void> => {
    const exchange = new Exchange(req, 'GET', ROUTE, req.headers['accept-language']);
    const reply = await settle(exchange, HOT_RULES, read, id);
    // A client that hung up meanwhile: nothing to write to.
    if (!res.destroyed) {
      // With writeHead, node:http no longer computes the length itself (it would send chunks).
      reply.headers['content-length'] = String(Buffer.byteLength(reply.body));
      res.writeHead(reply.status, reply.headers);
      res.end(reply.body);
    }
    report(done, exchange, reply.status);
  };

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
      warnUnexpected(`answering GET ${ROUTE}`, error);
      res.destroy();
    });
    return true;
  };
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
