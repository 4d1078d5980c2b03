/**
 * Plans, credits and limits over real HTTP: requests per minute (429 rate_limited with Retry-After
 * and RateLimit-*), concurrent conversions (429 concurrency_limit), conversions per window (429
 * rate_limited, details.limit), insufficient_credits vs free_quota_exhausted with both amounts,
 * the cost of files over 100 MB, charging only on success, no overspend under concurrent
 * submissions, and file_too_large refused while the upload streams, leaving no spool file.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import {
  assertAlive, assertError, call, getAccount, InputServer, newAccount, png, spoolFiles, submitFile, submitJson,
  waitForEnd, type Client,
} from '../helpers/api-support.ts';
import type { PlanId } from '../../src/model/plan.ts';
import { startDaemon, type DaemonHandle } from '../helpers/daemon.ts';

const MIB = 1024 * 1024;
const RACE_CREDITS = 5;

describe('limits and credits over HTTP', () => {
  let daemon: DaemonHandle;
  const inputs = new InputServer();
  let image: Buffer;
  /** Every account the tests use, made at once up front (each is a few runs of the admin CLI). */
  const account: Record<string, Client> = {};
  const ACCOUNTS: Record<string, [PlanId, number | undefined]> = {
    rpm: ['free', undefined], concurrency: ['free', undefined], window: ['free', undefined], freeBroke: ['free', 0],
    liteBroke: ['lite', 0], liteOne: ['lite', 1], liteReserve: ['lite', 1], race: ['pro', RACE_CREDITS],
    upload: ['free', undefined], exact: ['free', undefined], liteBig: ['lite', undefined],
  };

  before(async () => {
    // Private URLs allowed: held local URL inputs keep conversions active as long as a test needs.
    // Held inputs occupy workers, so there are more workers than held inputs at any time.
    [daemon] = await Promise.all([startDaemon({ args: ['--allow-private-urls', '--workers', '4'] }), inputs.start()]);
    image = await png(20, 20);
    await Promise.all(Object.entries(ACCOUNTS).map(async ([name, [plan, credits]]) => {
      account[name] = await newAccount(daemon, plan, credits === undefined ? {} : { credits });
    }));
  });
  after(async () => {
    await inputs.stop();
    await daemon.dispose();
  });

  it('requests per minute: a free account gets 30, then 429 rate_limited with Retry-After and RateLimit-*', async () => {
    const free = account.rpm!;
    const started = Date.now();
    const answers = await Promise.all(Array.from({ length: 36 }, () => getAccount(free)));
    const elapsed = Date.now() - started;
    const passed = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status === 429);
    // The bucket refills at 30/min (one request per 2 s) while the burst is served.
    const refill = Math.floor(elapsed / 2000) + 1;
    assert.ok(passed.length >= 30 && passed.length <= 30 + refill, `passed ${passed.length} in ${elapsed} ms`);
    assert.ok(refused.length >= 1);
    assert.equal(passed.length + refused.length, answers.length);
    for (const ok of passed) {
      assert.equal(ok.headers.get('ratelimit-limit'), '30');
      assert.match(ok.headers.get('ratelimit-remaining') ?? '', /^\d+$/);
      assert.match(ok.headers.get('ratelimit-reset') ?? '', /^\d+$/);
    }
    const remaining = passed.map((a) => Number(a.headers.get('ratelimit-remaining')));
    assert.equal(Math.min(...remaining), 0);
    assert.ok(Math.max(...remaining) >= 28);
    for (const no of refused) {
      const error = assertError(no, 429, 'rate_limited');
      const retryAfter = no.headers.get('retry-after') ?? '';
      assert.match(retryAfter, /^\d+$/);
      assert.ok(Number(retryAfter) >= 1 && Number(retryAfter) <= 60, retryAfter);
      assert.equal(no.headers.get('ratelimit-limit'), '30');
      assert.equal(no.headers.get('ratelimit-remaining'), '0');
      assert.match(no.headers.get('ratelimit-reset') ?? '', /^[1-9]\d*$/);
      assert.equal(error.details?.limit, 'requests_per_minute');
      assert.match(error.message, new RegExp(`${retryAfter} seconds`));
    }
    // Other accounts are not affected...
    assert.equal((await getAccount(daemon)).status, 200);
    // ...and the Retry-After is honest: after it, a request passes again.
    const wait = Math.max(...refused.map((r) => Number(r.headers.get('retry-after'))));
    await new Promise((resolve) => setTimeout(resolve, wait * 1000 + 100));
    assert.equal((await getAccount(free)).status, 200);
  });

  it('concurrent conversions: a free account may have 2 active, the third is 429 concurrency_limit', async () => {
    const free = account.concurrency!;
    const url = inputs.serve('/held/concurrency.png', image, { hold: true });
    let ids: string[] = [];
    try {
      const first = await submitJson(free, { target: 'webp', url });
      const second = await submitJson(free, { target: 'webp', url });
      assert.equal(first.status, 202);
      assert.equal(second.status, 202);
      ids = [first.body.id, second.body.id];
      const account = await getAccount(free);
      assert.equal(account.body.limits.concurrent_conversions, 2);
      assert.equal(account.body.limits.active_conversions, 2);

      const third = await submitFile(free, { target: 'webp' }, { data: image, name: 'third.png' });
      const error = assertError(third, 429, 'concurrency_limit');
      assert.match(error.message, /\b2\b/);
    } finally {
      inputs.release('/held/concurrency.png');
    }
    for (const id of ids) assert.equal((await waitForEnd(free, id)).status, 'succeeded');
    assert.deepEqual(await spoolFiles(daemon.dataDir), [], 'the refused upload and the downloads leave nothing in the spool');
    assert.equal((await getAccount(free)).body.limits.active_conversions, 0);
    const now = await submitFile(free, { target: 'webp', wait: '20' }, { data: image, name: 'third.png' });
    assert.equal(now.status, 200);
  });

  it('conversions per window: the 21st conversion of a free account in 10 minutes is 429 rate_limited', async () => {
    const free = account.window!;
    const limits = (await getAccount(free)).body.limits;
    assert.equal(limits.conversions_per_window, 20);
    assert.equal(limits.window_seconds, 600);
    for (let i = 0; i < 20; i++) {
      const done = await submitFile(free, { target: 'png', wait: '20' }, { data: image, name: `n${i}.png` });
      assert.equal(done.status, 200, JSON.stringify(done.body));
    }
    const refused = await submitFile(free, { target: 'png' }, { data: image, name: 'n20.png' });
    const error = assertError(refused, 429, 'rate_limited');
    assert.equal(error.details?.limit, 'conversions_per_window');
    const retryAfter = Number(refused.headers.get('retry-after'));
    assert.ok(Number.isInteger(retryAfter) && retryAfter > 500 && retryAfter <= 600, `Retry-After ${retryAfter}`);
    // 20 conversions of weight 1 were charged.
    assert.equal((await getAccount(free)).body.credits.remaining, 80);
  });

  describe('credits', () => {
    it('a free account out of credits gets 402 free_quota_exhausted naming remaining, allowance and cost', async () => {
      const free = account.freeBroke!;
      const error = assertError(await submitFile(free, { target: 'webp' }, { data: image, name: 'a.png' }), 402, 'free_quota_exhausted');
      assert.match(error.message, /\b0 of 100\b/);
      assert.match(error.message, /costs 1\b/);
      const german = assertError(await submitFile(free, { target: 'webp' }, { data: image, name: 'a.png' }, { 'accept-language': 'de' }), 402, 'free_quota_exhausted');
      assert.match(german.message, /0 von 100/);
      assert.deepEqual(await spoolFiles(daemon.dataDir), []);
    });

    it('a paid account gets 402 insufficient_credits naming cost and balance; files over 100 MB cost a multiple', async () => {
      const lite = account.liteBroke!;
      const none = assertError(await submitFile(lite, { target: 'webp' }, { data: image, name: 'a.png' }), 402, 'insufficient_credits');
      assert.match(none.message, /costs 1 credits but only 0 remain/);

      // One credit covers a file up to 100 MB, not one byte more.
      const one = account.liteOne!;
      const big = Buffer.alloc(100 * MIB + 1);
      image.copy(big);
      const error = assertError(await submitFile(one, { target: 'webp' }, { data: big, name: 'big.png' }), 402, 'insufficient_credits');
      assert.match(error.message, /costs 2 credits but only 1 remain/);
      assert.deepEqual(await spoolFiles(daemon.dataDir), [], 'the refused 100 MB upload is removed');
      const german = assertError(await submitFile(lite, { target: 'webp' }, { data: image, name: 'a.png' }, { 'accept-language': 'de' }), 402, 'insufficient_credits');
      assert.match(german.message, /kostet 1 Credits, es sind aber nur noch 0 übrig/);
      // The same credit does cover a small file.
      const small = await submitFile(one, { target: 'webp', wait: '20' }, { data: image, name: 'small.png' });
      assert.equal(small.status, 200, JSON.stringify(small.body));
      assert.equal(small.body.credits, 1);
    });

    it('a file over 100 MB that converts is charged twice the weight', async () => {
      const lite = account.liteBig!;
      // A real PNG followed by padding: the decoder stops at its end, so the conversion succeeds.
      const big = Buffer.alloc(100 * MIB + 1);
      image.copy(big);
      const done = await submitFile(lite, { target: 'webp', wait: '30' }, { data: big, name: 'padded.png' });
      assert.equal(done.status, 200, JSON.stringify(done.body));
      assert.equal(done.body.status, 'succeeded');
      assert.equal(done.body.input_size, 100 * MIB + 1);
      assert.equal(done.body.credits, 2);
      assert.equal((await getAccount(lite)).body.credits.remaining, 998);
    });

    it('a conversion is charged only when it succeeds; a reservation is released by failure and cancel', async () => {
      const lite = account.liteReserve!;
      const failed = await submitFile(lite, { target: 'webp', wait: '20' }, { data: Buffer.from('not a png'), name: 'broken.png' });
      assert.equal(failed.body.status, 'failed');
      assert.equal(failed.body.credits, 0);
      assert.equal((await getAccount(lite)).body.credits.remaining, 1);

      // A held URL keeps the only credit reserved: nothing else fits meanwhile.
      const url = inputs.serve('/held/reserve.png', image, { hold: true });
      try {
        const held = await submitJson(lite, { target: 'webp', url });
        assert.equal(held.status, 202);
        await inputs.requested('/held/reserve.png');
        assertError(await submitFile(lite, { target: 'webp' }, { data: image, name: 'b.png' }), 402, 'insufficient_credits');
        assert.equal((await getAccount(lite)).body.credits.remaining, 1, 'reserved, not charged');
        const cancelled = await call(lite, `/conversions/${held.body.id}`, { method: 'DELETE' });
        assert.equal(cancelled.body.status, 'cancelled');
        assert.equal(cancelled.body.credits, 0);
      } finally {
        inputs.release('/held/reserve.png');
      }

      const ok = await submitFile(lite, { target: 'webp', wait: '20' }, { data: image, name: 'c.png' });
      assert.equal(ok.body.status, 'succeeded');
      assert.equal(ok.body.credits, 1);
      assert.equal((await getAccount(lite)).body.credits.remaining, 0);
    });

    it('concurrent submissions never spend more credits than the account has', async () => {
      const credits = RACE_CREDITS;
      const pro = account.race!;
      const seen: number[] = [];
      let racing = true;
      const watcher = (async () => {
        while (racing) {
          const account = await getAccount(pro);
          if (account.status === 200) seen.push(account.body.credits.remaining!);
          // Paced: the watcher must not use up the account's requests per minute.
          await new Promise((resolve) => setTimeout(resolve, 25));
        }
      })();
      const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => submitFile(pro, { target: 'webp' }, { data: image, name: `race${i}.png` })));
      const accepted = answers.filter((a) => a.status === 202 || a.status === 200);
      for (const refused of answers.filter((a) => a.status !== 202 && a.status !== 200)) assertError(refused, 402, 'insufficient_credits');
      assert.ok(accepted.length >= 1 && accepted.length <= credits, `accepted ${accepted.length}`);
      const ended = await Promise.all(accepted.map((a) => waitForEnd(pro, a.body.id)));
      racing = false;
      await watcher;
      const charged = ended.reduce((sum, c) => sum + c.credits, 0);
      assert.ok(ended.every((c) => c.status === 'succeeded'));
      assert.equal(charged, accepted.length);
      assert.ok(charged <= credits);
      const remaining = (await getAccount(pro)).body.credits.remaining!;
      assert.equal(remaining, credits - charged);
      assert.ok(seen.length > 0 && seen.every((r) => r >= 0 && r <= credits), `balances seen: ${seen.join(',')}`);
      // Once spent, a second wave gets nothing at all.
      if (remaining === 0) {
        const wave = await Promise.all(Array.from({ length: 10 }, () => submitFile(pro, { target: 'webp' }, { data: image, name: 'more.png' })));
        for (const refused of wave) assertError(refused, 402, 'insufficient_credits');
      }
      assert.deepEqual(await spoolFiles(daemon.dataDir), []);
    });
  });

  describe('413 file_too_large', () => {
    let free: Client;
    before(() => {
      free = account.upload!;
    });

    /**
     * Streams a multipart upload of `total` file bytes over a raw socket (chunked, no
     * Content-Length) and stops writing when the answer starts to arrive. The socket is read
     * throughout and write errors after the answer are expected (the server closes the
     * connection on a body it will not read), so the answer is never lost to them.
     */
    async function streamUpload(client: Client, total: number): Promise<{ head: string; body: string; sentWhenAnswered: number }> {
      const url = new URL(`${client.baseUrl}/conversions`);
      const socket = connect(Number(url.port), url.hostname);
      await once(socket, 'connect');
      const received: Buffer[] = [];
      let sent = 0;
      let sentWhenAnswered = -1;
      socket.on('data', (data: Buffer) => {
        if (sentWhenAnswered < 0) sentWhenAnswered = sent;
        received.push(data);
        // The whole answer is in: hang up rather than wait for the server to.
        const text = Buffer.concat(received).toString('latin1');
        const end = text.indexOf('\r\n\r\n');
        const length = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, end));
        if (end >= 0 && (length ? text.length - end - 4 >= Number(length[1]) : text.endsWith('\r\n0\r\n\r\n'))) socket.destroy();
      });
      socket.on('error', () => undefined);
      // Not events.once: that rejects on the EPIPE expected after the answer.
      const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      const frame = (data: Buffer) => Buffer.concat([Buffer.from(`${data.length.toString(16)}\r\n`), data, Buffer.from('\r\n')]);
      socket.write(
        `POST ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${client.apiKey}\r\n` +
        'Content-Type: multipart/form-data; boundary=b\r\nTransfer-Encoding: chunked\r\n\r\n',
      );
      socket.write(frame(Buffer.from('--b\r\ncontent-disposition: form-data; name="target"\r\n\r\nwebp\r\n--b\r\ncontent-disposition: form-data; name="file"; filename="huge.png"\r\ncontent-type: image/png\r\n\r\n')));
      const chunk = frame(Buffer.alloc(MIB, 1));
      while (sentWhenAnswered < 0 && sent < total && !socket.destroyed) {
        const written = new Promise<void>((resolve) => socket.write(chunk, () => resolve()));
        sent += MIB;
        await written;
      }
      if (sentWhenAnswered < 0 && !socket.destroyed) socket.end(frame(Buffer.from('\r\n--b--\r\n')));
      await closed;
      const text = Buffer.concat(received).toString('utf8');
      const split = text.indexOf('\r\n\r\n');
      const head = text.slice(0, split);
      let body = text.slice(split + 4);
      if (/transfer-encoding: chunked/i.test(head)) body = body.replace(/(^|\r\n)[0-9a-f]+\r\n/gi, '');
      return { head, body: body.trim(), sentWhenAnswered };
    }

    it('is answered while the upload streams, with details.max_upload_mb, leaving no spool file', async () => {
      assert.equal((await getAccount(free)).body.limits.max_upload_mb, 100);
      const answer = await streamUpload(free, 1024 * MIB);
      assert.match(answer.head, /^HTTP\/1\.1 413 /);
      const body = JSON.parse(answer.body.replace(/\s*0$/, '')) as { error: { code: string; message: string; details: { max_upload_mb: number } } };
      assert.equal(body.error.code, 'file_too_large');
      assert.deepEqual(body.error.details, { max_upload_mb: 100 });
      assert.match(body.error.message, /100 MB/);
      // Answered once the limit was crossed, long before the 1 GiB was sent (socket buffers, and
      // the rest of the body drained while the answer is made, add some tens of MB).
      assert.ok(answer.sentWhenAnswered > 100 * MIB && answer.sentWhenAnswered < 512 * MIB, `answered after ${answer.sentWhenAnswered / MIB} MB`);
      assert.deepEqual(await spoolFiles(daemon.dataDir), []);
      await assertAlive(free);
    });

    it('a declared Content-Length far over the limit is refused before the body is read', async () => {
      const url = new URL(`${free.baseUrl}/conversions`);
      const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = httpRequest({
          host: url.hostname, port: url.port, path: url.pathname, method: 'POST',
          headers: { authorization: `Bearer ${free.apiKey}`, 'content-type': 'multipart/form-data; boundary=b', 'content-length': String(300 * MIB), 'accept-language': 'de' },
        }, (res) => {
          let body = '';
          res.on('data', (data: Buffer) => (body += data.toString()));
          res.on('end', () => {
            req.destroy();
            resolve({ status: res.statusCode ?? 0, body });
          });
        });
        req.on('error', reject);
        req.write('--b\r\n'); // and nothing more: the answer must come anyway
      });
      assert.equal(answer.status, 413);
      const body = JSON.parse(answer.body) as { error: { code: string; message: string; details: { max_upload_mb: number } } };
      assert.equal(body.error.code, 'file_too_large');
      assert.equal(body.error.details.max_upload_mb, 100);
      assert.match(body.error.message, /100 MB/);
      assert.match(body.error.message, /größer/);
      assert.deepEqual(await spoolFiles(daemon.dataDir), []);
    });

    it('a file of exactly the limit is accepted', async () => {
      const client = account.exact!;
      const exact = Buffer.alloc(100 * MIB);
      image.copy(exact);
      const got = await submitFile(client, { target: 'webp' }, { data: exact, name: 'exact.png' });
      assert.equal(got.status, 202, JSON.stringify(got.body));
      assert.equal(got.body.input_size, 100 * MIB);
      // Up to 100 MB costs the weight once.
      const ended = await waitForEnd(client, got.body.id);
      assert.equal(ended.status, 'succeeded');
      assert.equal(ended.credits, 1);
    });
  });
});
