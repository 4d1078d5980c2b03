import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ConversionRecord } from '../../src/model/conversion.ts';
import type { PeekedCaller } from '../../src/service/accounts.ts';
import type { ConversionService } from '../../src/service/conversion-service.ts';
import type { Admission, AdmissionNow } from './admission.ts';
import { Exchange, report, settle, settleNow, warnUnexpected, type FailureRules, type RequestReport } from './pipeline.ts';
import { errorAnswer, JSON_CONTENT_TYPE, type PlainAnswer } from './respond.ts';

const PREFIX = '/v1/conversions/';
/** Conversion ids and anything else a client may send there without percent-encoding. */
const PLAIN_SEGMENT = /^[A-Za-z0-9_-]{1,100}$/;
const ROUTE = '/v1/conversions/:id';

export interface HotReadDeps {
  admit: Admission;
  admitNow: AdmissionNow;
  conversions: Pick<ConversionService, 'get' | 'getNow' | 'publicJson'>;
  baseUrlFor: (req: IncomingMessage) => string;
  done?: RequestReport;
}

/** The API's failure as plain parts (errorAnswer is errorResponse byte for byte). */
const HOT_RULES: FailureRules<PlainAnswer> = { failure: (error, exchange) => errorAnswer(error, exchange.language, exchange.headers) };

/**
 * One read: the id asked for, and the caller once admitted at once (its request taken from its
 * bucket). The async way reads only its account's id after that moment, which never changes.
 */
interface Read {
  id: string;
  caller: PeekedCaller | undefined;
}

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
 * them; test/api/hot-read.test.ts holds the two paths to byte-identical answers.
 *
 * Where memory holds all it reads (a key that authenticated a moment ago, its account, the
 * switch, a conversion the store keeps in memory: AdmissionNow, ConversionService.getNow), the
 * answer is written before this returns: no promise at all. An answer deferred by a single await
 * cost a read 2-3 us of CPU under wrk and the whole async admission and read 10 us more (a
 * poller's read 31-34 us against a bare node:http server's 15). Wherever memory cannot say, the
 * async way answers, from the start or, once admitted, from the record.
 *
 * Returns false, touching nothing, for every other request: those go to h3 (a `?wait=`, an
 * encoded or odd id, another method or path).
 */
export function createHotRead(deps: HotReadDeps): (req: IncomingMessage, res: ServerResponse) => boolean {
  const { admit, admitNow, conversions, baseUrlFor, done } = deps;

  const found = (record: Readonly<ConversionRecord>, exchange: Exchange): PlainAnswer => ({
    status: 200,
    headers: { 'content-type': JSON_CONTENT_TYPE, ...exchange.headers, 'content-language': exchange.language },
    body: conversions.publicJson(record, baseUrlFor(exchange.req)),
  });

  /** The answer from memory; undefined where memory cannot say (`read.caller` set if it admitted the caller). */
  const readNow = (read: Read, exchange: Exchange): PlainAnswer | undefined => {
    const caller = admitNow(exchange.req.headers.authorization, 'read', exchange.headers);
    if (caller === undefined) return undefined;
    read.caller = caller;
    exchange.accountId = caller.account.id;
    const record = conversions.getNow(caller.account, read.id);
    return record === undefined ? undefined : found(record, exchange);
  };

  const readLater = async (read: Read, exchange: Exchange): Promise<PlainAnswer> => {
    const { req } = exchange;
    const caller = read.caller ?? (await admit(req.headers.authorization, 'read', exchange.headers, req));
    exchange.accountId = caller.account.id;
    return found(await conversions.get(caller.account, read.id), exchange);
  };

  const write = (res: ServerResponse, exchange: Exchange, reply: PlainAnswer): void => {
    // A client that hung up meanwhile: nothing to write to.
    if (!res.destroyed) {
      // With writeHead, node:http no longer computes the length itself (it would send chunks).
      reply.headers['content-length'] = String(Buffer.byteLength(reply.body));
      res.writeHead(reply.status, reply.headers);
      res.end(reply.body);
    }
    report(done, exchange, reply.status);
  };

  /** Answered at once where memory says; else a promise of the answer. */
  const answer = (req: IncomingMessage, res: ServerResponse, id: string): Promise<void> | undefined => {
    const exchange = new Exchange(req, 'GET', ROUTE, req.headers['accept-language']);
    const read: Read = { id, caller: undefined };
    const now = settleNow(exchange, HOT_RULES, readNow, read);
    if (now !== undefined) {
      write(res, exchange, now);
      return undefined;
    }
    return settle(exchange, HOT_RULES, readLater, read).then((reply) => write(res, exchange, reply));
  };

  // Only a failing log or metrics call or a broken socket gets here: never take the daemon down.
  const unexpected = (res: ServerResponse, error: unknown): void => {
    warnUnexpected(`answering GET ${ROUTE}`, error);
    res.destroy();
  };

  return (req, res) => {
    const url = req.url;
    if (req.method !== 'GET' || url === undefined || !url.startsWith(PREFIX)) return false;
    const id = url.slice(PREFIX.length);
    if (!PLAIN_SEGMENT.test(id)) return false;
    // Several Authorization headers: node:http keeps the first, srvx joins them; h3's way (401)
    // is the answer, so such a request goes there.
    if (repeatsAuthorization(req.rawHeaders)) return false;
    try {
      answer(req, res, id)?.catch((error: unknown) => unexpected(res, error));
    } catch (error) {
      unexpected(res, error);
    }
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
