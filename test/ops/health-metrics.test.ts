/**
 * What an operator's probes and scrapers see on the real daemon: /healthz, /readyz (and its
 * failure when the store cannot be written), the disk floor, /metrics moving with traffic (on
 * the main port, or on its own address behind a token), and the JSON log lines.
 */
import assert from 'node:assert/strict';
import { chmod, chown, rm, writeFile } from 'node:fs/promises';
import { createServer, METHODS, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { call, parseMetrics, pngUpload, rawStatus, sample, slowPng, smallPng, startConvd, tempDir, waitUntil, type Convd } from '../helpers/ops-support.ts';

const NOBODY = { uid: 65534, gid: 65534 };

async function metricsOf(daemon: Convd, url = `${daemon.url}/metrics`): Promise<Map<string, number>> {
  const response = await fetch(url);
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return parseMetrics(await response.text());
}

describe('/healthz and /readyz', () => {
  let daemon: Convd;
  before(async () => {
    daemon = await startConvd();
  });
  after(() => daemon.dispose());

  it('answer without a key, also in maintenance', async () => {
    const health = await call(daemon, '/healthz', { key: null });
    assert.deepEqual([health.status, health.body], [200, { status: 'ok' }]);
    const ready = await call(daemon, '/readyz', { key: null });
    assert.equal(ready.status, 200, JSON.stringify(ready.body));
    assert.equal(ready.body.status, 'ready');
    for (const check of ['store', 'disk', 'engines', 'accepting']) assert.equal(ready.body.checks[check].ok, true, check);
    assert.match(ready.body.checks.disk.detail, /^\d+ MiB free, floor 256 MiB$/);
    // The maintenance switch closes /v1, not the probes.
    const { convdAdmin } = await import('../helpers/daemon.ts');
    assert.equal((await convdAdmin(daemon.dataDir, ['maintenance', 'on'])).code, 0);
    try {
      assert.equal((await call(daemon, '/v1/account')).status, 503);
      assert.equal((await call(daemon, '/healthz', { key: null })).status, 200);
      assert.equal((await call(daemon, '/readyz', { key: null })).status, 200);
    } finally {
      await convdAdmin(daemon.dataDir, ['maintenance', 'off']);
    }
  });
});

describe('/readyz when the store cannot be written', () => {
  // Root writes through any file mode, and the tests run as root: there the daemon runs as
  // `nobody` (setpriv), so that taking the write permission away from the store directory bites
  // exactly as it would for the convd user of deploy/convd.service (a read-only or full disk, a
  // wrong chown after a restore). Run as any other user, the daemon runs as that user.
  const asRoot = process.getuid?.() === 0;
  let dataDir: string;
  let daemon: Convd;
  before(async () => {
    dataDir = await tempDir();
    if (asRoot) await chown(dataDir, NOBODY.uid, NOBODY.gid);
    daemon = await startConvd({ dataDir, ...(asRoot ? { user: NOBODY } : {}) });
  });
  after(async () => {
    await chmod(join(dataDir, 'store'), 0o700).catch(() => undefined);
    await daemon.dispose();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('is 503 with the store check failing, and ready again once it is writable', async () => {
    assert.equal((await call(daemon, '/readyz', { key: null })).status, 200);
    await chmod(join(dataDir, 'store'), 0o500);
    const failing = await waitUntil('readyz to fail', async () => {
      const answer = await call(daemon, '/readyz', { key: null });
      return answer.status === 503 ? answer : undefined;
    });
    assert.equal(failing.body.status, 'not_ready');
    assert.deepEqual(failing.body.checks.store, { ok: false, detail: 'not writable: EACCES' });
    assert.equal(failing.body.checks.disk.ok, true, 'only the store is at fault');
    // Liveness is another question: the process is fine, a restart would not help.
    assert.equal((await call(daemon, '/healthz', { key: null })).status, 200);
    await chmod(join(dataDir, 'store'), 0o700);
    await waitUntil('readyz to recover', async () => ((await call(daemon, '/readyz', { key: null })).status === 200 ? true : undefined));
  });
});

describe('disk-space floor', () => {
  let dir: string;
  let file: string;
  let daemon: Convd;
  before(async () => {
    dir = await tempDir();
    file = join(dir, 'convd.json');
    // 100 TiB: above the free space of any disk this runs on.
    await writeFile(file, JSON.stringify({ disk_floor_mb: 100 * 1024 * 1024 }));
    daemon = await startConvd({ args: ['--config', file] });
  });
  after(async () => {
    await daemon.dispose();
    await rm(dir, { recursive: true, force: true });
  });

  it('refuses submissions with 503 api_disabled and a clear message, keeps reads working', async () => {
    const png = await smallPng();
    const refused = await call(daemon, '/v1/conversions', { method: 'POST', body: pngUpload(png) });
    assert.equal(refused.status, 503);
    assert.equal(refused.body.error.code, 'api_disabled');
    assert.equal(refused.body.error.message, 'The API is temporarily unavailable: the server is low on disk space, so it accepts no new conversions; try again in 60 seconds.');
    assert.deepEqual(refused.body.error.details, { reason: 'low_disk_space' });
    assert.equal(refused.headers.get('retry-after'), '60');
    const german = await call(daemon, '/v1/conversions', { method: 'POST', body: pngUpload(png), headers: { 'accept-language': 'de' } });
    assert.match(german.body.error.message, /zu wenig freien Speicherplatz/);
    assert.equal((await call(daemon, '/v1/account')).status, 200);
    assert.equal((await call(daemon, '/v1/conversions')).status, 200);
    const ready = await call(daemon, '/readyz', { key: null });
    assert.equal(ready.status, 503);
    assert.equal(ready.body.checks.disk.ok, false);
    assert.match(ready.body.checks.disk.detail, /MiB free, floor 104857600 MiB/);
    assert.ok(daemon.logs().some((l) => l.event === 'disk.low' && l.level === 'warn'), 'one warning when the floor is crossed');
  });

  it('takes submissions again once the floor is lowered (SIGHUP)', async () => {
    await writeFile(file, JSON.stringify({ disk_floor_mb: 0 }));
    daemon.signal('SIGHUP');
    await waitUntil('the reload', () => daemon.logs().find((l) => l.event === 'config.reloaded'));
    const accepted = await call(daemon, '/v1/conversions', { method: 'POST', body: pngUpload(await smallPng(), 'photo.png', { target: 'webp', wait: '10' }) });
    assert.equal(accepted.status, 200, JSON.stringify(accepted.body));
    // /readyz answers from a check at most a second old.
    await waitUntil('readyz to follow', async () => ((await call(daemon, '/readyz', { key: null })).status === 200 ? true : undefined));
  });
});

describe('/metrics and the log lines move with traffic', () => {
  let daemon: Convd;
  let receiver: Server;
  let receiverUrl: string;
  before(async () => {
    receiver = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(req.url === '/ok' ? 200 : 500).end());
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    daemon = await startConvd({ args: ['--workers', '1', '--allow-insecure-callbacks'], env: { CONVD_WEBHOOK_SCHEDULE_SCALE: '0.00005' } });
  });
  after(async () => {
    await daemon.dispose();
    await new Promise((resolve) => receiver.close(resolve));
  });

  it('counts requests by route pattern and status, with latency histograms', async () => {
    assert.ok(!daemon.logs().some((l) => l.event === 'metrics.not_served'), 'served on loopback without a token, no warning');
    const before = await metricsOf(daemon);
    for (let i = 0; i < 3; i++) assert.equal((await call(daemon, '/v1/account')).status, 200);
    assert.equal((await call(daemon, '/v1/conversions/cnv_01m8000000000000000000000')).status, 404);
    assert.equal((await call(daemon, '/v1/nothing-here')).status, 404);
    // HEAD is answered as GET but counted as what it was, on every path (keyed, the hot read, unmatched).
    assert.equal((await call(daemon, '/v1/account', { method: 'HEAD' })).status, 200);
    assert.equal((await call(daemon, '/v1/conversions/cnv_01m8000000000000000000000', { method: 'HEAD' })).status, 404);
    assert.equal((await call(daemon, '/v1/nothing-here', { method: 'HEAD' })).status, 404);
    const now = await metricsOf(daemon);
    const delta = (name: string, labels: Record<string, string>) => sample(now, name, labels) - sample(before, name, labels);
    assert.equal(delta('convd_http_requests_total', { method: 'GET', route: '/v1/account', status: '200' }), 3);
    assert.equal(delta('convd_http_requests_total', { method: 'GET', route: '/v1/conversions/:id', status: '404' }), 1);
    assert.equal(delta('convd_http_requests_total', { method: 'GET', route: 'unmatched', status: '404' }), 1);
    assert.equal(delta('convd_http_requests_total', { method: 'HEAD', route: '/v1/account', status: '200' }), 1);
    assert.equal(delta('convd_http_requests_total', { method: 'HEAD', route: '/v1/conversions/:id', status: '404' }), 1);
    assert.equal(delta('convd_http_requests_total', { method: 'HEAD', route: 'unmatched', status: '404' }), 1);
    assert.equal(delta('convd_http_request_duration_seconds_count', { method: 'GET', route: '/v1/account' }), 3);
    assert.equal(
      sample(now, 'convd_http_request_duration_seconds_bucket', { method: 'GET', route: '/v1/account', le: '+Inf' }),
      sample(now, 'convd_http_request_duration_seconds_count', { method: 'GET', route: '/v1/account' }),
    );
    assert.ok(sample(now, 'convd_http_request_duration_seconds_sum', { method: 'GET', route: '/v1/account' }) > 0);
    assert.ok(sample(now, 'convd_data_dir_free_bytes') > 0);
    assert.equal(sample(now, 'convd_workers'), 1);
    assert.ok(sample(now, 'convd_process_resident_memory_bytes') > 0, 'process metrics too');
  });

  it('counts methods outside the API\'s as `other`: every other method Node parses adds no series', async () => {
    const paths = ['/metrics', '/healthz', '/v1/account', '/v1/conversions/cnv_01m8000000000000000000000', '/v1/nothing-here'];
    const send = async (methods: readonly string[]) => {
      for (const method of methods) for (const path of paths) await rawStatus(daemon.url, method, path);
    };
    const series = async () => [...(await metricsOf(daemon)).keys()].filter((key) => key.startsWith('convd_http_request'));
    // One of each label (PROPFIND standing for `other`), then every method Node parses. CONNECT
    // opens a tunnel, which convd does not serve: Node closes the connection before any route.
    await send(['GET', 'HEAD', 'POST', 'DELETE', 'OPTIONS', 'PROPFIND']);
    const labelled = await series();
    const others = METHODS.filter((method) => method !== 'CONNECT');
    assert.ok(['MKCOL', 'PURGE', 'LINK', 'M-SEARCH', 'TRACE', 'QUERY', 'SOURCE'].every((method) => others.includes(method)));
    await send(others);
    const all = await series();
    assert.deepEqual(all.filter((key) => !labelled.includes(key)), [], 'no series of its own for any method');
    const methods = new Set(all.map((key) => /method="([^"]*)"/.exec(key)![1]));
    assert.deepEqual([...methods].sort(), ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'POST', 'other']);
    assert.ok(sample(await metricsOf(daemon), 'convd_http_requests_total', { method: 'other', route: 'unmatched', status: '405' }) >= 4 * (others.length - 5), 'the four known paths answer 405 to each');
    // The log keeps what was sent: Node parses only its own list of methods, so no made-up text gets there.
    await waitUntil('the request lines', () => (daemon.logs().some((l) => l.event === 'request' && l.method === 'M-SEARCH') ? true : undefined));
  });

  it('counts conversions by outcome, the queue, running work by engine and result bytes', async () => {
    const before = await metricsOf(daemon);
    // One slow conversion holds the only worker while a second waits: running 1, queue 1.
    const slow = await call(daemon, '/v1/conversions', { method: 'POST', body: pngUpload(await slowPng(1600), 'slow.png') });
    assert.equal(slow.status, 202);
    const waiting = await call(daemon, '/v1/conversions', { method: 'POST', body: pngUpload(await smallPng(), 'small.png') });
    const busy = await waitUntil('a running conversion with one queued', async () => {
      const m = await metricsOf(daemon);
      return sample(m, 'convd_conversions_running', { engine: 'image' }) === 1 && sample(m, 'convd_queue_depth') === 1 ? m : undefined;
    });
    assert.equal(sample(busy, 'convd_conversions_running', { engine: 'media' }), 0);
    const done = await call(daemon, `/v1/conversions/${waiting.body.id}?wait=30`);
    assert.equal(done.body.status, 'succeeded');
    const first = await call(daemon, `/v1/conversions/${slow.body.id}?wait=30`);
    assert.equal(first.body.status, 'succeeded');
    const broken = await call(daemon, '/v1/conversions', { method: 'POST', body: pngUpload(Buffer.from('not a png at all'), 'broken.png', { target: 'webp', source: 'png', wait: '20' }) });
    assert.equal(broken.body.status, 'failed', JSON.stringify(broken.body));

    const now = await metricsOf(daemon);
    const delta = (name: string, labels: Record<string, string> = {}) => sample(now, name, labels) - sample(before, name, labels);
    assert.equal(delta('convd_conversions_submitted_total'), 3);
    assert.equal(delta('convd_conversions_ended_total', { status: 'succeeded' }), 2);
    assert.equal(delta('convd_conversions_ended_total', { status: 'failed' }), 1);
    assert.equal(delta('convd_conversion_failures_total', { code: broken.body.error.code }), 1);
    assert.equal(delta('convd_conversion_duration_seconds_count', { engine: 'image', status: 'succeeded' }), 2);
    assert.equal(sample(now, 'convd_queue_depth'), 0);
    assert.equal(sample(now, 'convd_conversions_running', { engine: 'image' }), 0);
    assert.equal(delta('convd_results_bytes'), done.body.result.size + first.body.result.size);
    // Counted in the office engine, brought over at each scrape (engines-office shows it counting).
    for (const outcome of ['succeeded', 'failed']) assert.ok(now.has(`convd_office_retries_total{outcome="${outcome}"}`), `convd_office_retries_total{outcome="${outcome}"} is served`);

    // DELETE of a result frees its bytes.
    assert.equal((await call(daemon, `/v1/conversions/${first.body.id}`, { method: 'DELETE' })).status, 200);
    const afterDelete = await metricsOf(daemon);
    assert.equal(sample(afterDelete, 'convd_results_bytes') - sample(now, 'convd_results_bytes'), -first.body.result.size);
    assert.equal(sample(afterDelete, 'convd_results_expired_total') - sample(now, 'convd_results_expired_total'), 1);
  });

  it('counts webhook attempts by outcome', async () => {
    const before = await metricsOf(daemon);
    const png = await smallPng();
    await call(daemon, '/v1/conversions', { method: 'POST', body: pngUpload(png, 'a.png', { target: 'webp', callback_url: `${receiverUrl}/ok` }) });
    await call(daemon, '/v1/conversions', { method: 'POST', body: pngUpload(png, 'b.png', { target: 'webp', callback_url: `${receiverUrl}/broken` }) });
    // The schedule is shrunk ~20000x: six failed attempts take well under a second.
    const now = await waitUntil('the deliveries to settle', async () => {
      const m = await metricsOf(daemon);
      const delta = (outcome: string) => sample(m, 'convd_webhook_attempts_total', { outcome }) - sample(before, 'convd_webhook_attempts_total', { outcome });
      return delta('delivered') === 1 && delta('failed') === 1 ? { m, delta } : undefined;
    });
    assert.equal(now.delta('retrying'), 5, 'five failed attempts with another one scheduled, then the sixth gives up');
  });

  it('logs one JSON line per request (route pattern, no key; an answered poll only at debug) and one per state change', async () => {
    const { body } = await call(daemon, '/v1/conversions', { method: 'POST', body: pngUpload(await smallPng(), 'logged.png', { target: 'webp', wait: '20' }) });
    await call(daemon, `/v1/conversions/${body.id}`);
    const missing = 'cnv_01m8tq83n7wva311mhtxdc474w';
    assert.equal((await call(daemon, `/v1/conversions/${missing}`)).status, 404);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const logs = daemon.logs();
    const requests = logs.filter((l) => l.event === 'request');
    const post = requests.find((l) => l.route === '/v1/conversions' && l.method === 'POST' && l.status === 200);
    assert.ok(post, 'a request line with the route pattern');
    assert.equal(post.account, daemon.accountId);
    assert.equal(post.client, '127.0.0.1');
    assert.equal(typeof post.duration_ms, 'number');
    assert.equal(post.level, 'info');
    // A waiting client's polls are counted by the metrics, not logged at info; a poll that fails is.
    assert.ok(!requests.some((l) => l.route === '/v1/conversions/:id' && l.method === 'GET' && l.status === 200), 'no line for an answered poll at info');
    const failed = requests.find((l) => l.route === '/v1/conversions/:id' && l.status === 404);
    assert.ok(failed, 'a line for a poll that failed, with the route pattern, not the id');
    assert.equal(failed.method, 'GET');
    assert.equal(failed.level, 'info');
    const lines = daemon.stderr().split('\n').filter((line) => line.startsWith('{'));
    assert.ok(lines.every((line) => !line.includes(daemon.apiKey) && !line.includes('cvk_')), 'no key in any log line');
    const states = logs.filter((l) => l.event === 'conversion' && l.id === body.id).map((l) => `${l.from}->${l.to}`);
    assert.deepEqual(states, ['null->queued', 'queued->processing', 'processing->succeeded']);
    assert.equal(logs.find((l) => l.event === 'conversion' && l.id === body.id && l.to === 'succeeded')!.engine, 'image');
  });
});

describe('/metrics on an API port beyond loopback', () => {
  let dir: string;
  let file: string;
  let daemon: Convd;
  let local: string;
  before(async () => {
    dir = await tempDir();
    file = join(dir, 'convd.json');
    await writeFile(file, JSON.stringify({ host: '0.0.0.0' }));
    daemon = await startConvd({ args: ['--config', file] });
    local = `http://127.0.0.1:${new URL(daemon.url).port}`;
  });
  after(async () => {
    await daemon.dispose();
    await rm(dir, { recursive: true, force: true });
  });

  it('is not served without a token: 404 like any unknown path, and one warning saying how to serve it', async () => {
    assert.equal(new URL(daemon.url).hostname, '0.0.0.0');
    for (const method of ['GET', 'HEAD', 'POST']) {
      const answer = await call({ url: local, apiKey: daemon.apiKey }, '/metrics', { method, key: null });
      assert.equal(answer.status, 404, method);
      if (method !== 'HEAD') assert.deepEqual(answer.body.error.code, 'not_found', method);
    }
    const unknown = await call({ url: local, apiKey: daemon.apiKey }, '/nothing-here', { key: null });
    assert.deepEqual((await call({ url: local, apiKey: daemon.apiKey }, '/metrics', { key: null })).body, unknown.body);
    assert.equal((await call({ url: local, apiKey: daemon.apiKey }, '/healthz', { key: null })).status, 200);
    assert.equal((await call({ url: local, apiKey: daemon.apiKey }, '/v1/account')).status, 200);
    const warnings = daemon.logs().filter((l) => l.event === 'metrics.not_served');
    assert.equal(warnings.length, 1);
    assert.equal(warnings[0]!.level, 'warn');
    assert.match(String(warnings[0]!.message), /0\.0\.0\.0 is not a loopback address.*metrics_token \(--metrics-token.*metrics_listen \(--metrics-listen/);
  });

  it('/readyz tells ok or failed only, without the token: no free space, no engine problems', async () => {
    const ready = await call({ url: local, apiKey: daemon.apiKey }, '/readyz', { key: null });
    assert.equal(ready.status, 200);
    const checks = ready.body.checks as Record<string, Record<string, unknown>>;
    assert.ok(Object.keys(checks).length >= 3);
    for (const [name, check] of Object.entries(checks)) assert.deepEqual(Object.keys(check), ['ok'], name);
  });

  it('is served behind the token once one is set (SIGHUP); /readyz shows its details with it', async () => {
    await writeFile(file, JSON.stringify({ host: '0.0.0.0', metrics_token: 'scrape-token-2' }));
    daemon.signal('SIGHUP');
    await waitUntil('the reload', () => daemon.logs().find((l) => l.event === 'config.reloaded'));
    assert.equal((await fetch(`${local}/metrics`)).status, 401);
    const ok = await fetch(`${local}/metrics`, { headers: { authorization: 'Bearer scrape-token-2' } });
    assert.equal(ok.status, 200);
    assert.ok(parseMetrics(await ok.text()).has('convd_queue_depth'));
    const detailed = await fetch(`${local}/readyz`, { headers: { authorization: 'Bearer scrape-token-2' } });
    const disk = ((await detailed.json()) as { checks: Record<string, { detail?: string }> }).checks.disk;
    assert.match(disk?.detail ?? '', /MiB free/);
  });
});

describe('/metrics on an address of its own, behind a token', () => {
  let daemon: Convd;
  before(async () => {
    daemon = await startConvd({ args: ['--metrics-listen', '127.0.0.1:0', '--metrics-token', 'scrape-token-1'] });
  });
  after(() => daemon.dispose());

  it('serves metrics only there, and only with the token', async () => {
    assert.ok(daemon.metricsUrl, daemon.stderr());
    assert.notEqual(new URL(daemon.metricsUrl).port, new URL(daemon.url).port);
    const main = await call(daemon, '/metrics', { key: null });
    assert.equal(main.status, 404);
    assert.equal(main.body.error.code, 'not_found');
    assert.equal((await fetch(`${daemon.metricsUrl}/metrics`)).status, 401);
    assert.equal((await fetch(`${daemon.metricsUrl}/metrics`, { headers: { authorization: 'Bearer wrong-token-1' } })).status, 401);
    const ok = await fetch(`${daemon.metricsUrl}/metrics`, { headers: { authorization: 'Bearer scrape-token-1' } });
    assert.equal(ok.status, 200);
    assert.ok(parseMetrics(await ok.text()).has('convd_queue_depth'));
    assert.equal((await fetch(`${daemon.metricsUrl}/v1/account`)).status, 404, 'nothing but /metrics there');
    assert.ok(!daemon.logs().some((l) => l.event === 'metrics.not_served'), 'no warning: /metrics has an address of its own');
  });

  it('logs at the level asked for: --log-level warn drops request lines, debug adds the answered polls', async () => {
    const quiet = await startConvd({ args: ['--log-level', 'warn'] });
    const chatty = await startConvd({ args: ['--log-level', 'debug'] });
    try {
      await call(quiet, '/v1/account');
      const { body } = await call(chatty, '/v1/conversions', { method: 'POST', body: pngUpload(await smallPng(), 'polled.png', { target: 'webp', wait: '20' }) });
      assert.equal((await call(chatty, `/v1/conversions/${body.id}`)).status, 200);
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.equal(quiet.logs().filter((l) => l.event === 'request').length, 0);
      assert.ok(quiet.logs().some((l) => l.event === 'started'), 'lifecycle lines stay');
      const poll = chatty.logs().find((l) => l.event === 'request' && l.route === '/v1/conversions/:id' && l.status === 200);
      assert.ok(poll, 'the answered poll at debug');
      assert.equal(poll.level, 'debug');
      assert.equal(poll.method, 'GET');
      assert.equal(poll.account, chatty.accountId);
    } finally {
      await Promise.all([quiet.dispose(), chatty.dispose()]);
    }
  });
});
