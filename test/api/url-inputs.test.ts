/**
 * URL inputs over real HTTP: with `--allow-private-urls` a daemon converts files served from
 * 127.0.0.1 (fetching state, names, sizes, failures of the remote side, the size cap announced by
 * Content-Length, cancel while fetching); without it every private, loopback, link-local,
 * metadata and CGNAT address, in any spelling, fails with fetch_failed before a byte is fetched.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import {
  assertFieldErrors, call, download, form, InputServer, newAccount, png, pollUntilStatus, spoolFiles, submitJson,
  submitUrlencoded, waitForEnd,
} from '../helpers/api-support.ts';
import { startDaemon, type DaemonHandle } from '../helpers/daemon.ts';

describe('URL inputs over HTTP', () => {
  let trusted: DaemonHandle;
  let guarded: DaemonHandle;
  let internal: DaemonHandle;
  const inputs = new InputServer();
  let image: Buffer;

  before(async () => {
    [trusted, guarded] = await Promise.all([
      startDaemon({ args: ['--allow-private-urls'] }),
      startDaemon(),
      inputs.start(),
    ]);
    // The input server (127.0.0.1) plays an operator's internal file server.
    internal = await startDaemon({ args: ['--url-allow-networks', '127.0.0.1/32'] });
    image = await png(30, 20);
  });
  after(async () => {
    await inputs.stop();
    await Promise.all([trusted.dispose(), guarded.dispose(), internal.dispose()]);
  });

  describe('with --allow-private-urls', () => {
    it('a file served from 127.0.0.1 is fetched (status fetching) and converted', async () => {
      inputs.serve('/files/My%20Photo.png', image, { contentType: 'image/png', hold: true });
      const created = await submitJson(trusted, { target: 'webp', url: `${inputs.origin}/files/My%20Photo.png` });
      assert.equal(created.status, 202);
      assert.equal(created.body.input_size, null, 'unknown until fetched');
      assert.equal(created.body.original_name, 'My Photo.png', 'the last path segment, decoded');
      try {
        await inputs.requested('/files/My%20Photo.png');
        const fetching = await pollUntilStatus(trusted, created.body.id, 'fetching');
        assert.ok(fetching.started_at);
        assert.equal(fetching.progress, null);
        assert.equal(fetching.result, null);
      } finally {
        inputs.release('/files/My%20Photo.png');
      }
      const done = await waitForEnd(trusted, created.body.id);
      assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
      assert.equal(done.input_size, image.length);
      assert.equal(done.result?.filename, 'My Photo.webp');
      const meta = await sharp((await download(trusted, done.id)).bytes).metadata();
      assert.deepEqual([meta.format, meta.width, meta.height], ['webp', 30, 20]);
      assert.deepEqual(await spoolFiles(trusted.dataDir), [], 'the download spool is cleaned up');
    });

    it('a url in a multipart form, and a filename field naming the input', async () => {
      const url = inputs.serve('/plain', image);
      const got = await call(trusted, '/conversions', { method: 'POST', body: form({ target: 'jpg', url, source: 'png', filename: 'report-figure.png', wait: '20' }) });
      assert.equal(got.status, 200, JSON.stringify(got.body));
      assert.equal(got.body.status, 'succeeded');
      assert.equal(got.body.original_name, 'report-figure.png');
      assert.equal(got.body.result?.filename, 'report-figure.jpg');
      // No name anywhere: `download`.
      const nameless = await submitJson(trusted, { target: 'png', url: `${inputs.origin}/`, source: 'png', wait: 20 });
      assert.equal(nameless.body.original_name, 'download');
    });

    it('a redirect to another local path is followed', async () => {
      inputs.serve('/moved', Buffer.alloc(0), { status: 302, headers: { location: '/files/target.png' } });
      inputs.serve('/files/target.png', image);
      const got = await submitUrlencoded(trusted, { target: 'png', url: `${inputs.origin}/moved`, source: 'png', wait: '20' });
      assert.equal(got.body.status, 'succeeded', JSON.stringify(got.body.error));
      assert.equal(got.body.input_size, image.length);
    });

    it('failures of the remote side fail the conversion with fetch_failed and credits 0', async () => {
      const lite = await newAccount(trusted, 'lite');
      inputs.serve('/gone.png', Buffer.from('gone'), { status: 404 });
      inputs.serve('/error.png', Buffer.from('oops'), { status: 500 });
      for (const [path, text] of [['/gone.png', /404/], ['/error.png', /500/], ['/never-served.png', /404/]] as const) {
        const got = await submitJson(lite, { target: 'webp', url: `${inputs.origin}${path}`, wait: 20 });
        assert.equal(got.status, 200);
        assert.equal(got.body.status, 'failed', path);
        assert.equal(got.body.error?.code, 'fetch_failed', path);
        assert.match(got.body.error?.message ?? '', text);
        assert.equal(got.body.credits, 0);
        assert.equal(got.body.result, null);
      }
      // Nothing listens here.
      const closed = await submitJson(lite, { target: 'webp', url: 'http://127.0.0.1:9/x.png', wait: 20 });
      assert.equal(closed.body.error?.code, 'fetch_failed');
      assert.equal((await call<{ credits: { remaining: number } }>(lite, '/account')).body.credits.remaining, 1000);
    });

    it('a body that is no image fails with input_invalid', async () => {
      const url = inputs.serve('/fake.png', Buffer.from('<html>not an image</html>'), { contentType: 'text/html' });
      const got = await submitJson(trusted, { target: 'webp', url, wait: 20 });
      assert.equal(got.body.status, 'failed');
      assert.equal(got.body.error?.code, 'input_invalid');
    });

    it('a file announced larger than the plan allows fails with file_too_large', async () => {
      const free = await newAccount(trusted, 'free');
      // Announces 200 MB (the free plan takes 100) and sends a few bytes: refused on the header.
      const url = inputs.serve('/huge.png', image, { headers: { 'content-length': String(200 * 1024 * 1024) } });
      const got = await submitJson(free, { target: 'webp', url, wait: 20 });
      assert.equal(got.body.status, 'failed');
      assert.equal(got.body.error?.code, 'file_too_large');
      assert.match(got.body.error?.message ?? '', /100 MB/);
      assert.equal(got.body.credits, 0);
      assert.deepEqual(await spoolFiles(trusted.dataDir), []);
    });

    it('cancelling while fetching stops the download: cancelled, no result, nothing left', async () => {
      inputs.serve('/slow.png', image, { hold: true });
      const created = await submitJson(trusted, { target: 'webp', url: `${inputs.origin}/slow.png` });
      try {
        await inputs.requested('/slow.png');
        await pollUntilStatus(trusted, created.body.id, 'fetching');
        const cancelled = await call(trusted, `/conversions/${created.body.id}`, { method: 'DELETE' });
        assert.equal(cancelled.status, 200);
        assert.equal(cancelled.body.status, 'cancelled');
        assert.ok(cancelled.body.finished_at);
        assert.equal(cancelled.body.credits, 0);
      } finally {
        inputs.release('/slow.png');
      }
      // Stays cancelled: the released response does not revive it.
      await new Promise((resolve) => setTimeout(resolve, 200));
      const after = await call(trusted, `/conversions/${created.body.id}`);
      assert.equal(after.body.status, 'cancelled');
      assert.equal(after.body.result, null);
      assert.deepEqual(await spoolFiles(trusted.dataDir), []);
    });
  });

  describe('with --url-allow-networks naming one internal server', () => {
    it('that server\'s file is converted; its redirect to another private address fails fetch_failed, never asked', async () => {
      const { createServer } = await import('node:http');
      let otherRequests = 0;
      const other = createServer((_request, response) => {
        otherRequests++;
        response.end('x');
      });
      await new Promise<void>((resolve) => other.listen(0, '127.0.0.2', () => resolve()));
      try {
        inputs.serve('/files/internal.png', image, { contentType: 'image/png' });
        const done = await submitJson(internal, { target: 'webp', url: `${inputs.origin}/files/internal.png`, wait: 30 });
        assert.equal(done.body.status, 'succeeded', JSON.stringify(done.body.error));
        const meta = await sharp((await download(internal, done.body.id)).bytes).metadata();
        assert.deepEqual([meta.format, meta.width, meta.height], ['webp', 30, 20]);
        const otherUrl = `http://127.0.0.2:${(other.address() as { port: number }).port}/a.png`;
        inputs.serve('/files/moved.png', Buffer.alloc(0), { status: 302, headers: { location: otherUrl } });
        for (const url of [`${inputs.origin}/files/moved.png`, otherUrl, 'http://169.254.169.254/latest/a.png']) {
          const refused = await submitJson(internal, { target: 'webp', url, wait: 20 });
          assert.equal(refused.body.status, 'failed', url);
          assert.equal(refused.body.error?.code, 'fetch_failed', url);
          assert.match(refused.body.error?.message ?? '', /not a public address/, url);
        }
        assert.equal(otherRequests, 0, 'the other private server was never asked');
      } finally {
        other.close();
      }
    });
  });

  describe('without --allow-private-urls', () => {
    it('the same local URL fails with fetch_failed and the server is never asked', async () => {
      const before = inputs.requests.length;
      inputs.serve('/files/guarded.png', image);
      const got = await submitJson(guarded, { target: 'webp', url: `${inputs.origin}/files/guarded.png`, wait: 20 });
      assert.equal(got.status, 200);
      assert.equal(got.body.status, 'failed');
      assert.equal(got.body.error?.code, 'fetch_failed');
      assert.equal(got.body.credits, 0);
      assert.equal(inputs.requests.length, before);
    });

    it('every private, loopback, link-local, metadata or CGNAT address in any spelling is refused', async () => {
      const port = new URL(inputs.origin).port;
      const hosts = [
        `127.0.0.1:${port}`, `localhost:${port}`, '[::1]', `[::ffff:127.0.0.1]:${port}`, '[::ffff:7f00:1]', `2130706433:${port}`,
        `0x7f000001:${port}`, `0177.0.0.1:${port}`, `127.1:${port}`, '0.0.0.0', '10.1.2.3', '172.16.5.4', '192.168.1.1',
        '169.254.169.254', '100.64.0.1', '[fd00::1]', '[fe80::1]',
      ];
      const before = inputs.requests.length;
      const answers = await Promise.all(hosts.map((host) => submitJson(guarded, { target: 'webp', url: `http://${host}/latest/a.png`, wait: 20 })));
      for (const [index, got] of answers.entries()) {
        assert.equal(got.status, 200, hosts[index]);
        assert.equal(got.body.status, 'failed', hosts[index]);
        assert.equal(got.body.error?.code, 'fetch_failed', `${hosts[index]}: ${JSON.stringify(got.body.error)}`);
      }
      assert.equal(inputs.requests.length, before, 'nothing reached the local server');
    });

    it('schemes other than http(s) are refused at submission', async () => {
      for (const url of ['file:///etc/passwd', 'ftp://127.0.0.1/a.png', 'gopher://127.0.0.1/a.png', 'data:image/png;base64,iVBORw0KGgo=']) {
        assert.equal(assertFieldErrors(await submitJson(guarded, { target: 'webp', url }), ['url']).url!.reason, 'invalid_url', url);
      }
    });
  });
});
