/**
 * GET /v1/conversions/{id} is answered on node:http directly (daemon/http/hot-read.ts) when it
 * has no query string, and through h3 otherwise. The two paths must give the same answer byte for
 * byte: status, body and every header (only Date and the RateLimit counters move between two
 * requests). Each case here asks both ways, `?wait=0` being the h3 way, over real HTTP.
 */
import assert from 'node:assert/strict';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { createHotRead } from '../../daemon/http/hot-read.ts';
import { ApiError } from '../../src/errors/api-error.ts';
import { newAccount, png, submitFile, type Client } from '../helpers/api-support.ts';
import { convdAdmin, startDaemon, type DaemonHandle } from '../helpers/daemon.ts';

interface RawAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  /** Header names as written on the wire (case kept). */
  names: string[];
  body: string;
}

/** One request on its own connection, headers exactly as they came. */
function raw(url: string, headers: Record<string, string | string[]>): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, names: res.rawHeaders.filter((_, i) => i % 2 === 0), body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Headers that legitimately differ between two requests made one after the other. */
const MOVING = new Set(['date', 'ratelimit-remaining', 'ratelimit-reset', 'retry-after']);

function stable(headers: IncomingHttpHeaders): Record<string, unknown> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !MOVING.has(name)).sort(([a], [b]) => a.localeCompare(b)));
}

/** Asks for `path` the hot way and the h3 way and checks the answers are the same; returns the hot one. */
async function sameBothWays(daemon: DaemonHandle, path: string, headers: Record<string, string | string[]>): Promise<RawAnswer> {
  const hot = await raw(`${daemon.url}${path}`, headers);
  const viaH3 = await raw(`${daemon.url}${path}?wait=0`, headers);
  assert.equal(hot.status, viaH3.status, `status of ${path}`);
  assert.equal(hot.body, viaH3.body, `body of ${path}`);
  assert.deepEqual(stable(hot.headers), stable(viaH3.headers), `headers of ${path}`);
  assert.deepEqual([...hot.names].sort(), [...viaH3.names].sort(), `header names (as written) of ${path}`);
  assert.equal(hot.headers['content-length'], String(Buffer.byteLength(hot.body)));
  assert.equal(hot.headers['transfer-encoding'], undefined);
  return hot;
}

describe('GET /v1/conversions/{id}: the node:http fast path answers as h3 does', () => {
  let daemon: DaemonHandle;
  let owner: Client;
  let stranger: Client;
  let conversionId: string;

  before(async () => {
    daemon = await startDaemon();
    [owner, stranger] = await Promise.all([newAccount(daemon, 'pro'), newAccount(daemon, 'pro')]);
    const created = await submitFile(owner, { target: 'webp', wait: '30' }, { name: 'small.png', data: await png(24, 16) });
    assert.equal(created.status, 200);
    assert.equal(created.body.status, 'succeeded');
    conversionId = created.body.id;
  });
  after(() => daemon.dispose());

  it('a succeeded conversion, in English and in German', async () => {
    const en = await sameBothWays(daemon, `/v1/conversions/${conversionId}`, { authorization: `Bearer ${owner.apiKey}` });
    assert.equal(en.status, 200);
    const body = JSON.parse(en.body) as { id: string; status: string; result: { download_url: string } };
    assert.equal(body.id, conversionId);
    assert.equal(body.status, 'succeeded');
    assert.equal(body.result.download_url, `${daemon.baseUrl}/conversions/${conversionId}/download`);
    assert.equal(en.headers['content-type'], 'application/json; charset=utf-8');
    assert.equal(en.headers['content-language'], 'en');
    assert.ok(en.headers['ratelimit-limit']);

    const de = await sameBothWays(daemon, `/v1/conversions/${conversionId}`, { authorization: `Bearer ${owner.apiKey}`, 'accept-language': 'fr;q=0.9, de' });
    assert.equal(de.headers['content-language'], 'de');
  });

  it('another account\'s conversion, an unknown id and a malformed id are the same 404', async () => {
    const auth = { authorization: `Bearer ${stranger.apiKey}` };
    for (const id of [conversionId, 'cnv_01aaaaaaaaaaaaaaaaaaaaaaaa', 'not-an-id']) {
      const answer = await sameBothWays(daemon, `/v1/conversions/${id}`, auth);
      assert.equal(answer.status, 404);
      assert.equal((JSON.parse(answer.body) as { error: { code: string } }).error.code, 'not_found');
    }
    const german = await sameBothWays(daemon, `/v1/conversions/${conversionId}`, { ...auth, 'accept-language': 'de-DE' });
    assert.equal(german.headers['content-language'], 'de');
  });

  it('no key, a wrong key, a malformed header: 401 unauthenticated', async () => {
    const variants: Record<string, string>[] = [{}, { authorization: 'Bearer cvk_wrong' }, { authorization: 'Basic abc' }, { authorization: `Bearer ${owner.apiKey} extra` }];
    for (const headers of variants) {
      const answer = await sameBothWays(daemon, `/v1/conversions/${conversionId}`, headers);
      assert.equal(answer.status, 401);
      assert.equal((JSON.parse(answer.body) as { error: { code: string } }).error.code, 'unauthenticated');
    }
  });

  it('two Authorization headers: the same 401 both ways', async () => {
    const answer = await sameBothWays(daemon, `/v1/conversions/${conversionId}`, { authorization: [`Bearer ${owner.apiKey}`, `Bearer ${owner.apiKey}`] });
    assert.equal(answer.status, 401);
  });

  it('a key without the read scope: 403 forbidden, with the RateLimit headers', async () => {
    const writer = await newAccount(daemon, 'pro', { scopes: 'convert' });
    // Twice: the second time the key has authenticated a moment ago and is admitted from memory.
    for (let round = 0; round < 2; round++) {
      const answer = await sameBothWays(daemon, `/v1/conversions/${conversionId}`, { authorization: `Bearer ${writer.apiKey}` });
      assert.equal(answer.status, 403);
      assert.ok(answer.headers['ratelimit-limit']);
    }
  });

  it('past the requests per minute: the same 429 with Retry-After both ways', async () => {
    const free = await newAccount(daemon, 'free');
    const auth = { authorization: `Bearer ${free.apiKey}` };
    let status = 0;
    for (let i = 0; i < 100 && status !== 429; i++) status = (await raw(`${daemon.url}/v1/conversions/${conversionId}`, auth)).status;
    assert.equal(status, 429, 'the free plan\'s bucket ran out');
    const answer = await sameBothWays(daemon, `/v1/conversions/${conversionId}`, auth);
    assert.equal(answer.status, 429);
    assert.match(String(answer.headers['retry-after']), /^\d+$/);
    assert.equal((JSON.parse(answer.body) as { error: { code: string } }).error.code, 'rate_limited');
  });

  it('maintenance: the same 503 api_disabled', async () => {
    assert.equal((await convdAdmin(daemon.dataDir, ['maintenance', 'on', '--retry-after', '77', '--json'])).code, 0);
    try {
      const answer = await sameBothWays(daemon, `/v1/conversions/${conversionId}`, { authorization: `Bearer ${owner.apiKey}` });
      assert.equal(answer.status, 503);
      assert.equal(answer.headers['retry-after'], '77');
    } finally {
      assert.equal((await convdAdmin(daemon.dataDir, ['maintenance', 'off', '--json'])).code, 0);
    }
  });

  it('a key revoked after use is refused at once (its hash is memoized, its record is not)', async () => {
    const client = await newAccount(daemon, 'pro');
    const auth = { authorization: `Bearer ${client.apiKey}` };
    assert.equal((await raw(`${daemon.url}/v1/conversions/${conversionId}`, auth)).status, 404);
    const keys = await convdAdmin(daemon.dataDir, ['keys', 'list', '--account', client.accountId, '--json']);
    const keyId = (keys.json as { id: string }[])[0]!.id;
    assert.equal((await convdAdmin(daemon.dataDir, ['keys', 'revoke', keyId, '--json'])).code, 0);
    assert.equal((await raw(`${daemon.url}/v1/conversions/${conversionId}`, auth)).status, 401);
  });
});

describe('which requests the fast path takes', () => {
  const taken: string[] = [];
  const hotRead = createHotRead({
    admit: () => Promise.reject(new ApiError('unauthenticated')),
    admitNow: () => undefined,
    conversions: {} as never,
    baseUrlFor: () => 'http://x/v1',
  });
  const takes = (method: string, url: string) => {
    const handled = hotRead({ method, url, headers: {}, rawHeaders: [] } as never, { destroyed: true } as never);
    if (handled) taken.push(`${method} ${url}`);
    return handled;
  };

  it('only a plain GET of one conversion, without a query', () => {
    assert.equal(takes('GET', '/v1/conversions/cnv_01abc'), true);
    assert.equal(takes('GET', '/v1/conversions/cnv_01abc?wait=5'), false);
    assert.equal(takes('GET', '/v1/conversions/cnv_01abc/download'), false);
    assert.equal(takes('GET', '/v1/conversions/'), false);
    assert.equal(takes('GET', '/v1/conversions'), false);
    assert.equal(takes('GET', '/v1/conversions/cnv%5F01'), false);
    assert.equal(takes('GET', '/v1/conversions/cnv_01abc/'), false);
    assert.equal(takes('HEAD', '/v1/conversions/cnv_01abc'), false);
    assert.equal(takes('DELETE', '/v1/conversions/cnv_01abc'), false);
    assert.equal(takes('GET', '/v2/conversions/cnv_01abc'), false);
    assert.deepEqual(taken, ['GET /v1/conversions/cnv_01abc']);
  });
});

describe('a read memory can answer is written before the call returns', () => {
  const caller = { account: { id: 'acc_1' }, key: { id: 'key_1' } } as never;
  const request = { method: 'GET', url: '/v1/conversions/cnv_x', headers: { authorization: 'Bearer cvk_a' }, rawHeaders: ['Authorization', 'Bearer cvk_a'] } as never;

  /** A response that keeps what is written to it. */
  function response() {
    const written: { status?: number; headers?: Record<string, string>; body?: string } = {};
    const res = {
      destroyed: false,
      writeHead(status: number, headers: Record<string, string>) {
        written.status = status;
        written.headers = headers;
      },
      end(body: string) {
        written.body = body;
      },
    };
    return { res: res as never, written };
  }

  /** A hot read whose every dependency counts its calls; `now` and `record` say what memory holds. */
  function hotReadWith(now: { admitNow: () => unknown; record: unknown }) {
    const calls = { admit: 0, admitNow: 0, get: [] as string[] };
    const hotRead = createHotRead({
      admit: async () => {
        calls.admit++;
        return caller;
      },
      admitNow: (_authorization, _scope, headers) => {
        calls.admitNow++;
        headers['ratelimit-limit'] = '60';
        return now.admitNow() as never;
      },
      conversions: {
        getNow: () => now.record as never,
        get: async (account, id) => {
          calls.get.push(`${account.id} ${id}`);
          return { id } as never;
        },
        publicJson: (record) => JSON.stringify({ id: record.id }),
      },
      baseUrlFor: () => 'http://x/v1',
    });
    return { hotRead, calls };
  }

  const settled = () => new Promise((resolve) => setImmediate(resolve));

  it('admitted and found in memory: answered at once, the async admission never asked', () => {
    const { hotRead, calls } = hotReadWith({ admitNow: () => caller, record: { id: 'cnv_x' } });
    const { res, written } = response();
    assert.equal(hotRead(request, res), true);
    assert.equal(written.status, 200, 'written before hotRead returned');
    assert.equal(written.body, '{"id":"cnv_x"}');
    assert.equal(written.headers?.['ratelimit-limit'], '60');
    assert.equal(written.headers?.['content-length'], '14');
    assert.deepEqual(calls, { admit: 0, admitNow: 1, get: [] });
  });

  it('refused at once (an empty bucket): the same error answer, at once', () => {
    const { hotRead, calls } = hotReadWith({
      admitNow: () => {
        throw new ApiError('rate_limited', { params: { retry_after: 3 }, headers: { 'Retry-After': '3' } });
      },
      record: undefined,
    });
    const { res, written } = response();
    hotRead(request, res);
    assert.equal(written.status, 429);
    assert.equal(written.headers?.['retry-after'], '3');
    assert.equal(written.headers?.['ratelimit-limit'], '60');
    assert.equal((JSON.parse(written.body!) as { error: { code: string } }).error.code, 'rate_limited');
    assert.equal(calls.admit, 0);
  });

  const laterCases = [
    { name: 'admitted at once but the record not in memory: read the async way, admitted once (one request from the bucket)', admitNow: () => caller, record: undefined, admitted: 0 },
    { name: 'memory cannot admit: the async way from the start', admitNow: () => undefined, record: { id: 'cnv_x' }, admitted: 1 },
  ];
  for (const { name, admitNow, record, admitted } of laterCases) {
    it(name, async () => {
      const { hotRead, calls } = hotReadWith({ admitNow, record });
      const { res, written } = response();
      hotRead(request, res);
      assert.equal(written.status, undefined, 'not at once');
      await settled();
      assert.equal(written.status, 200);
      assert.deepEqual(calls, { admit: admitted, admitNow: 1, get: ['acc_1 cnv_x'] });
    });
  }
});
