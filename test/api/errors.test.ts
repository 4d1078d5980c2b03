/**
 * The one error shape over real HTTP: unauthenticated, forbidden by scope, not_found (another
 * account's conversion included), validation_failed with per-field details, unsupported_conversion,
 * method_not_allowed, not_ready, invalid_state, api_disabled; messages in English and German by
 * Accept-Language; and malformed requests, none of which gets a 500 or takes the daemon down.
 */
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, describe, it } from 'node:test';
import {
  asAnswer, assertAlive, assertError, assertFieldErrors, call, download, form, newAccount, newKey, png, rawRequest,
  slowPng, spoolFiles, submitFile, submitJson, submitUrlencoded, waitForEnd, type Client, type PublicConversion,
} from '../helpers/api-support.ts';
import { convdAdmin, startDaemon, type DaemonHandle } from '../helpers/daemon.ts';

describe('errors over HTTP', () => {
  let daemon: DaemonHandle;
  let image: Buffer;
  /** A conversion of another account: invisible to the daemon's own key. */
  let foreign: PublicConversion;
  let foreignClient: Client;
  let failed: PublicConversion;

  before(async () => {
    // These suites send well over the 60 failed authentications a minute one address may make
    // (test/api/auth-failures.test.ts covers that limit).
    daemon = await startDaemon({ env: { CONVD_AUTH_FAILURES_PER_MINUTE: '1000' } });
    image = await png(24, 16);
    foreignClient = await newAccount(daemon, 'pro');
    const made = await submitFile(foreignClient, { target: 'webp', wait: '20' }, { data: image, name: 'theirs.png' });
    assert.equal(made.status, 200);
    foreign = made.body;
    // Bytes that claim to be a PNG but are not: the conversion fails with input_invalid.
    const broken = await submitFile(daemon, { target: 'webp', wait: '20' }, { data: Buffer.from('definitely not an image'), name: 'broken.png' });
    assert.equal(broken.status, 200);
    failed = broken.body;
    assert.equal(failed.status, 'failed');
  });
  after(() => daemon.dispose());

  /**
   * A refused upload is removed before the answer; a URL input another test started spools into the
   * same directory until its fetch ends (offline: when DNS gives up), so the check allows it a moment.
   */
  const noSpoolFiles = async (): Promise<void> => {
    for (let i = 0; i < 250 && (await spoolFiles(daemon.dataDir)).length > 0; i++) await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(await spoolFiles(daemon.dataDir), []);
  };

  describe('401 unauthenticated', () => {
    it('for a missing, malformed, unknown or revoked key, on every endpoint', async () => {
      const revokedAccount = await newAccount(daemon, 'lite');
      const listed = await convdAdmin(daemon.dataDir, ['keys', 'list', '--account', revokedAccount.accountId, '--json']);
      const keyId = (listed.json as { id: string }[])[0]!.id;
      assert.equal((await convdAdmin(daemon.dataDir, ['keys', 'revoke', keyId, '--json'])).code, 0);

      const authorizations: (string | null)[] = [
        null, '', 'Bearer', `Basic ${Buffer.from('user:pass').toString('base64')}`, 'Bearer cvk_unknownunknownunknownunknown',
        `Bearer ${daemon.apiKey}x`, `Bearer ${'cvk_'.padEnd(300, 'a')}`, `Bearer ${revokedAccount.apiKey}`,
      ];
      const endpoints: [string, string][] = [
        ['GET', '/account'], ['GET', '/formats'], ['GET', '/formats/png'], ['GET', '/conversions'], ['POST', '/conversions'],
        ['POST', '/convert'], ['GET', `/conversions/${foreign.id}`], ['DELETE', `/conversions/${foreign.id}`],
        ['GET', `/conversions/${foreign.id}/download`],
      ];
      await Promise.all(authorizations.flatMap((authorization) => endpoints.map(async ([method, path]) => {
        const headers: Record<string, string> = authorization === null ? {} : { authorization };
        assertError(await call(daemon, path, { method, key: null, headers }), 401, 'unauthenticated');
      })));
      // The revoked key's account still exists; only the key is dead.
      const fresh = await newKey(daemon, revokedAccount.accountId, 'read');
      assert.equal((await call(daemon, '/account', { key: fresh })).status, 200);
    });
  });

  describe('403 forbidden by scope', () => {
    let readOnly: string;
    let convertOnly: string;
    let deleteOnly: string;

    before(async () => {
      [readOnly, convertOnly, deleteOnly] = await Promise.all([
        newKey(daemon, daemon.accountId, 'read'),
        newKey(daemon, daemon.accountId, 'convert'),
        newKey(daemon, daemon.accountId, 'delete'),
      ]);
    });

    it('a key without `convert` cannot submit', async () => {
      for (const key of [readOnly, deleteOnly]) {
        const got = await call(daemon, '/conversions', { method: 'POST', key, body: new URLSearchParams({ target: 'webp', url: 'https://example.com/a.png' }) });
        const error = assertError(got, 403, 'forbidden');
        assert.match(error.message, /convert/);
      }
    });

    it('a key without `read` cannot read anything', async () => {
      const mine = await submitFile(daemon, { target: 'png', wait: '20' }, { data: image, name: 'mine.png' });
      for (const key of [convertOnly, deleteOnly]) {
        for (const path of ['/account', '/formats', '/formats/png', '/conversions', `/conversions/${mine.body.id}`, `/conversions/${mine.body.id}/download`]) {
          assertError(await call(daemon, path, { key }), 403, 'forbidden');
        }
      }
    });

    it('a key without `delete` cannot delete; one with it can', async () => {
      const mine = await submitFile(daemon, { target: 'png', wait: '20' }, { data: image, name: 'mine.png' });
      for (const key of [readOnly, convertOnly]) {
        assertError(await call(daemon, `/conversions/${mine.body.id}`, { method: 'DELETE', key }), 403, 'forbidden');
      }
      const deleted = await call(daemon, `/conversions/${mine.body.id}`, { method: 'DELETE', key: deleteOnly });
      assert.equal(deleted.status, 200);
      assert.equal(deleted.body.status, 'expired');
    });

    it('a key with `convert` can submit; with `read` it can read', async () => {
      const made = await submitFile(daemon, { target: 'png', wait: '20' }, { data: image, name: 'a.png' }, { authorization: `Bearer ${convertOnly}` });
      assert.equal(made.status, 200);
      assert.equal((await call(daemon, `/conversions/${made.body.id}`, { key: readOnly })).status, 200);
    });
  });

  describe('404 not_found', () => {
    it('for an unknown or malformed conversion id', async () => {
      for (const id of ['cnv_00000000000000000000000000', 'cnv_zzz', 'nothing', '..%2F..%2Fetc%2Fpasswd', 'cnv_' + 'a'.repeat(500)]) {
        for (const suffix of ['', '/download']) assertError(await call(daemon, `/conversions/${id}${suffix}`), 404, 'not_found');
        assertError(await call(daemon, `/conversions/${id}`, { method: 'DELETE' }), 404, 'not_found');
      }
    });

    it("for another account's conversion, which is indistinguishable from a missing one", async () => {
      const unknown = await call(daemon, '/conversions/cnv_00000000000000000000000000');
      const theirs = await call(daemon, `/conversions/${foreign.id}`);
      assertError(theirs, 404, 'not_found');
      assert.deepEqual(theirs.body, unknown.body);
      assertError(await call(daemon, `/conversions/${foreign.id}/download`), 404, 'not_found');
      assertError(await call(daemon, `/conversions/${foreign.id}`, { method: 'DELETE' }), 404, 'not_found');
      // ...and it is untouched and not listed for us.
      const owner = await call(foreignClient, `/conversions/${foreign.id}`);
      assert.equal(owner.body.status, 'succeeded');
      const list = await call<{ data: PublicConversion[] }>(daemon, '/conversions?limit=100');
      assert.ok(!list.body.data.some((c) => c.id === foreign.id));
    });

    it('for an unknown source format and an unknown route', async () => {
      const error = assertError(await call(daemon, '/formats/xyz'), 404, 'not_found');
      assert.match(error.message, /source format/);
      for (const path of ['/nothing', '/conversions/a/b/c', '/formats/png/webp']) assertError(await call(daemon, path), 404, 'not_found');
      const outside = await fetch(`${daemon.url}/v2/account`, { headers: { authorization: `Bearer ${daemon.apiKey}` } });
      assertError({ status: outside.status, headers: outside.headers, body: await outside.json() }, 404, 'not_found');
    });

    it('for a path with broken percent-encoding (in the spec shape, not the framework default)', async () => {
      for (const path of ['/conversions/%E0%A4%A', '/formats/%', '/conversions/%/download']) {
        assertError(asAnswer(await rawRequest(daemon, { method: 'GET', path })), 404, 'not_found');
      }
    });
  });

  it('405 method_not_allowed on a known path with another method', async () => {
    assertError(await call(daemon, '/conversions', { method: 'PUT' }), 405, 'method_not_allowed');
    assertError(await call(daemon, '/account', { method: 'POST' }), 405, 'method_not_allowed');
    assertError(await call(daemon, `/conversions/${failed.id}/download`, { method: 'DELETE' }), 405, 'method_not_allowed');
  });

  describe('422 validation_failed names every bad field in details.fields', () => {
    it('missing target and input', async () => {
      const problems = assertFieldErrors(await submitUrlencoded(daemon, { quality: '50' }), ['target', 'file']);
      assert.equal(problems.target!.reason, 'required');
      assert.equal(problems.file!.reason, 'conflict');
    });

    it('fields of the wrong type', async () => {
      const problems = assertFieldErrors(await submitJson(daemon, { target: 5, url: 7, wait: 'soon', source: ['png'] }), ['target', 'url', 'wait', 'source']);
      assert.equal(problems.target!.reason, 'invalid_type');
      assert.equal(problems.wait!.reason, 'invalid_type');
    });

    it('both a file and a url', async () => {
      const got = await submitFile(daemon, { target: 'webp', url: 'https://example.com/a.png' }, { data: image, name: 'a.png' });
      assert.equal(assertFieldErrors(got, ['url']).url!.reason, 'conflict');
      assert.deepEqual(await spoolFiles(daemon.dataDir), [], 'the refused upload is not left behind');
    });

    it('bad url and callback_url', async () => {
      for (const url of ['ftp://example.com/a.png', 'file:///etc/passwd', 'not a url', 'http://']) {
        assert.equal(assertFieldErrors(await submitJson(daemon, { target: 'webp', url }), ['url']).url!.reason, 'invalid_url', url);
      }
      const http = assertFieldErrors(await submitJson(daemon, { target: 'webp', url: 'https://example.com/a.png', callback_url: 'http://example.com/hook' }), ['callback_url']);
      assert.equal(http.callback_url!.reason, 'https_only');
      const bad = assertFieldErrors(await submitJson(daemon, { target: 'webp', url: 'https://example.com/a.png', callback_url: 'hook' }), ['callback_url']);
      assert.equal(bad.callback_url!.reason, 'invalid_url');
    });

    it('wait outside 0..30', async () => {
      for (const wait of ['31', '-1', '1000']) {
        const problems = assertFieldErrors(await submitUrlencoded(daemon, { target: 'webp', url: 'https://example.com/a.png', wait }), ['wait']);
        assert.equal(problems.wait!.reason, 'out_of_range');
      }
      assertFieldErrors(await submitUrlencoded(daemon, { target: 'webp', url: 'https://example.com/a.png', wait: '2.5' }), ['wait']);
      assertFieldErrors(await call(daemon, `/conversions/${failed.id}?wait=31`), ['wait']);
      assertFieldErrors(await call(daemon, `/conversions/${failed.id}?wait=x`), ['wait']);
    });

    it('options checked against the target’s descriptors', async () => {
      const url = 'https://example.com/a.png';
      const cases: [Record<string, unknown>, string, string][] = [
        [{ quality: 0 }, 'options.quality', 'out_of_range'],
        [{ quality: 101 }, 'options.quality', 'out_of_range'],
        [{ quality: 'high' }, 'options.quality', 'invalid_type'],
        [{ quality: 50.5 }, 'options.quality', 'invalid_type'],
        [{ width: 0 }, 'options.width', 'out_of_range'],
        [{ fit: 'stretch' }, 'options.fit', 'not_allowed'],
        [{ strip: 'maybe' }, 'options.strip', 'invalid_type'],
        [{ dpi: 300 }, 'options.dpi', 'unknown_option'],
      ];
      for (const [options, field, reason] of cases) {
        const problems = assertFieldErrors(await submitJson(daemon, { target: 'webp', url, options }), [field]);
        assert.equal(problems[field]!.reason, reason, JSON.stringify(options));
      }
      // png has no quality: an option of another target is unknown here.
      assert.equal(assertFieldErrors(await submitJson(daemon, { target: 'png', url, quality: 50 }), ['options.quality'])['options.quality']!.reason, 'unknown_option');
      // Several bad options at once are all named.
      assertFieldErrors(await submitUrlencoded(daemon, { target: 'webp', url, 'options[quality]': '0', fit: 'x', dpi: '1' }), ['options.quality', 'options.fit', 'options.dpi']);
    });

    it('options that contradict each other: both named, at submission', async () => {
      for (const [start, end] of [[5, 2], [4, 4]]) {
        const problems = assertFieldErrors(await submitJson(daemon, { target: 'mp3', url: 'https://example.com/talk.mp4', options: { trim_start: start, trim_end: end } }), ['options.trim_start', 'options.trim_end']);
        assert.equal(problems['options.trim_start']!.reason, 'must_precede');
        assert.match(problems['options.trim_start']!.message, new RegExp(`trim_end \\(${end}\\)`));
        assert.equal(problems['options.trim_end']!.reason, 'must_follow');
        assert.match(problems['options.trim_end']!.message, new RegExp(`trim_start \\(${start}\\)`));
      }
      // In German too, from the form fields.
      const german = await submitUrlencoded(daemon, { target: 'mp3', url: 'https://example.com/talk.mp4', trim_start: '9', trim_end: '1' }, { 'accept-language': 'de' });
      assert.match(assertFieldErrors(german, ['options.trim_start', 'options.trim_end'])['options.trim_end']!.message, /muss größer als trim_start \(9\) sein/);
      // Either alone, or in order, is fine.
      for (const options of [{ trim_start: 5 }, { trim_end: 2 }, { trim_start: 2, trim_end: 5 }]) {
        const accepted = await submitJson(daemon, { target: 'mp3', url: 'https://example.com/talk.mp4', options });
        assert.ok(accepted.status === 200 || accepted.status === 202, `${JSON.stringify(options)}: ${accepted.status} ${JSON.stringify(accepted.body)}`);
        // Cancelled at once: its fetch (spooling into the data dir) must not outlive this test. Offline,
        // the fetch can fail before the cancel arrives (a CI box's DNS gave up at once): then the
        // cancel's 409 is right, and only for a conversion that has ended as failed.
        const cancel = await call(daemon, `/conversions/${accepted.body.id}`, { method: 'DELETE' });
        if (cancel.status === 409) {
          assertError(cancel, 409, 'invalid_state');
          const ended = await call(daemon, `/conversions/${accepted.body.id}`);
          assert.equal(ended.body.status, 'failed', `cancel 409 for a conversion in ${JSON.stringify(ended.body)}`);
        } else {
          assert.equal(cancel.status, 200, JSON.stringify(cancel.body));
        }
      }
      await noSpoolFiles();
      const office = (await call(daemon, '/formats/docx')).status === 200;
      if (office || process.env.CI === 'true') {
        for (const pages of ['5-3', '0-2', '1,4-2']) {
          const problems = assertFieldErrors(await submitJson(daemon, { target: 'pdf', url: 'https://example.com/report.docx', options: { pages } }), ['options.pages']);
          assert.equal(problems['options.pages']!.reason, 'backward_range', pages);
        }
      }
    });

    it('variant not offered and source not determinable', async () => {
      assert.equal(assertFieldErrors(await submitJson(daemon, { target: 'webp', url: 'https://example.com/a.png', variant: 'fast' }), ['variant']).variant!.reason, 'not_allowed');
      const problems = assertFieldErrors(await submitJson(daemon, { target: 'webp', url: 'https://example.com/download' }), ['source']);
      assert.equal(problems.source!.reason, 'required');
      // No extension and content that is no known format.
      const unknown = await submitFile(daemon, { target: 'webp' }, { data: Buffer.from('just some words'), name: 'notes' });
      assert.equal(assertFieldErrors(unknown, ['source']).source!.reason, 'required');
      await noSpoolFiles();
    });

    it('list query parameters', async () => {
      assert.equal(assertFieldErrors(await call(daemon, '/conversions?status=done'), ['status']).status!.reason, 'not_allowed');
      for (const limit of ['0', '101', 'ten', '-1']) assertFieldErrors(await call(daemon, `/conversions?limit=${limit}`), ['limit']);
      for (const cursor of ['xyz', '%', 'A'.repeat(200), Buffer.from('cnv_nope').toString('base64url')]) {
        assertFieldErrors(await call(daemon, `/conversions?cursor=${encodeURIComponent(cursor)}`), ['cursor']);
      }
      assertFieldErrors(await call(daemon, '/conversions?status=x&limit=0&cursor=y'), ['status', 'limit', 'cursor']);
    });
  });

  it('422 unsupported_conversion names source and target', async () => {
    const url = 'https://example.com/a.png';
    const svg = assertError(await submitJson(daemon, { target: 'svg', url }), 422, 'unsupported_conversion');
    assert.match(svg.message, /png/);
    assert.match(svg.message, /svg/);
    assertError(await submitJson(daemon, { target: 'docx', url }), 422, 'unsupported_conversion');
    assertError(await submitJson(daemon, { target: 'png', url, source: 'xyz' }), 422, 'unsupported_conversion');
    assertError(await submitFile(daemon, { target: 'mp3' }, { data: image, name: 'a.png' }), 422, 'unsupported_conversion');
    await noSpoolFiles();
  });

  it('409 not_ready for a failed conversion; 409 invalid_state when deleting it', async () => {
    assert.equal(failed.credits, 0);
    assert.equal(failed.error?.code, 'input_invalid');
    assert.equal(failed.result, null);
    assertError(await call(daemon, `/conversions/${failed.id}/download`), 409, 'not_ready');
    const error = assertError(await call(daemon, `/conversions/${failed.id}`, { method: 'DELETE' }), 409, 'invalid_state');
    assert.match(error.message, /failed/);
    const german = assertError(await call(daemon, `/conversions/${failed.id}`, { method: 'DELETE', headers: { 'accept-language': 'de' } }), 409, 'invalid_state');
    assert.match(german.message, /fehlgeschlagen/);
  });

  describe('languages', () => {
    const cases: [string | null, 'en' | 'de'][] = [
      [null, 'en'],
      ['de', 'de'],
      ['de-CH', 'de'],
      ['DE-de,de;q=0.9', 'de'],
      ['fr-CH, fr;q=0.9, de;q=0.8, en;q=0.7', 'de'],
      ['en;q=0.5, de;q=0.9', 'de'],
      ['de;q=0.2, en;q=0.8', 'en'],
      ['en, de;q=0.9', 'en'],
      ['de;q=0', 'en'],
      ['fr', 'en'],
      ['*', 'en'],
      ['*;q=0.5, en;q=0', 'de'],
      ['de;q=abc, en;q=0.1', 'en'],
      [';;;,,q=,', 'en'],
    ];

    it('Accept-Language picks the message language by q-value; Content-Language names it', async () => {
      for (const [accept, language] of cases) {
        const headers: Record<string, string> = accept === null ? {} : { 'accept-language': accept };
        const got = await call(daemon, '/account', { key: null, headers });
        const error = assertError(got, 401, 'unauthenticated');
        assert.equal(got.headers.get('content-language'), language, String(accept));
        assert.equal(error.message, language === 'de' ? 'API-Schlüssel fehlt oder ist ungültig.' : 'API key missing or invalid.', String(accept));
      }
    });

    it('field messages are translated too, and successful answers carry Content-Language', async () => {
      const got = await submitJson(daemon, { target: 'webp', url: 'https://example.com/a.png', quality: 500 }, { 'accept-language': 'de-AT, en;q=0.5' });
      const problems = assertFieldErrors(got, ['options.quality']);
      assert.equal(problems['options.quality']!.message, 'muss zwischen 1 und 100 liegen');
      assert.match((got.body as unknown as { error: { message: string } }).error.message, /^Anfrageparameter fehlen oder sind ungültig\./);
      const ok = await call(daemon, '/formats', { headers: { 'accept-language': 'de' } });
      assert.equal(ok.status, 200);
      assert.equal(ok.headers.get('content-language'), 'de');
      const notFound = assertError(await call(daemon, '/conversions/cnv_00000000000000000000000000', { headers: { 'accept-language': 'de' } }), 404, 'not_found');
      assert.match(notFound.message, /Umwandlung/);
    });
  });

  describe('malformed requests get a 4xx in the spec shape, never a 500', () => {
    const multipart = (boundary: string, parts: string) => ({ headers: { 'content-type': `multipart/form-data; boundary=${boundary}` }, body: parts });
    const part = (boundary: string, name: string, value: string) => `--${boundary}\r\ncontent-disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
    const filePart = (boundary: string, name: string, filename: string, value: string | Buffer) =>
      Buffer.concat([Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="${name}"; filename="${filename}"\r\ncontent-type: image/png\r\n\r\n`), Buffer.from(value), Buffer.from('\r\n')]);

    const cases: { name: string; headers: Record<string, string>; body?: string | Buffer; status?: number }[] = [
      { name: 'broken JSON', headers: { 'content-type': 'application/json' }, body: '{"target":' },
      { name: 'JSON array', headers: { 'content-type': 'application/json' }, body: '[{"target":"webp"}]' },
      { name: 'JSON null', headers: { 'content-type': 'application/json' }, body: 'null' },
      { name: 'JSON string', headers: { 'content-type': 'application/json' }, body: '"webp"' },
      { name: 'empty JSON body', headers: { 'content-type': 'application/json' }, body: '' },
      { name: 'JSON with a file', headers: { 'content-type': 'application/json' }, body: '{"target":"webp","file":"iVBORw0KGgo="}' },
      { name: 'JSON options not an object', headers: { 'content-type': 'application/json' }, body: '{"target":"webp","url":"https://example.com/a.png","options":[1,2]}' },
      { name: 'JSON option of a wrong type', headers: { 'content-type': 'application/json' }, body: '{"target":"webp","url":"https://example.com/a.png","options":{"quality":{"v":1}}}' },
      { name: 'deeply nested JSON', headers: { 'content-type': 'application/json' }, body: '['.repeat(200_000) + ']'.repeat(200_000) },
      { name: 'JSON of invalid UTF-8', headers: { 'content-type': 'application/json' }, body: Buffer.from([0x7b, 0xff, 0xfe, 0x7d]) },
      { name: 'JSON over 1 MB', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ target: 'webp', url: `https://example.com/${'a'.repeat(1_100_000)}.png` }) },
      { name: 'JSON over 1 MB sent chunked', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' }, body: JSON.stringify({ target: 'webp', url: `https://example.com/${'a'.repeat(3_000_000)}.png` }) },
      { name: 'urlencoded over 1 MB sent chunked', headers: { 'content-type': 'application/x-www-form-urlencoded', 'transfer-encoding': 'chunked' }, body: `target=webp&url=${'x'.repeat(3_000_000)}` },
      { name: 'urlencoded over 1 MB', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `target=webp&url=${'x'.repeat(1_100_000)}` },
      { name: 'urlencoded with broken escapes', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'target=%E0%A4%A&url=%&quality=%zz' },
      { name: 'unknown content type', headers: { 'content-type': 'text/plain' }, body: 'target=webp' },
      { name: 'no content type', headers: {}, body: 'target=webp' },
      { name: 'multipart without boundary', headers: { 'content-type': 'multipart/form-data' }, body: part('x', 'target', 'webp') },
      { name: 'multipart of garbage', ...multipart('xyz', 'this is not multipart at all') },
      { name: 'multipart cut short', ...multipart('xyz', `${part('xyz', 'target', 'webp')}--xyz\r\ncontent-disposition: form-data; name="file"; filename="a.png"\r\n\r\nabc`) },
      { name: 'multipart with a huge field', ...multipart('xyz', `${part('xyz', 'target', 'w'.repeat(200_000))}--xyz--\r\n`) },
      { name: 'multipart with too many fields', ...multipart('xyz', `${Array.from({ length: 300 }, (_, i) => part('xyz', `f${i}`, 'v')).join('')}--xyz--\r\n`) },
      {
        name: 'multipart file in another field',
        headers: { 'content-type': 'multipart/form-data; boundary=xyz' },
        body: Buffer.concat([Buffer.from(part('xyz', 'target', 'webp')), filePart('xyz', 'upload', 'a.png', 'abc'), Buffer.from('--xyz--\r\n')]),
      },
      {
        name: 'multipart with two files',
        headers: { 'content-type': 'multipart/form-data; boundary=xyz' },
        body: Buffer.concat([Buffer.from(part('xyz', 'target', 'webp')), filePart('xyz', 'file', 'a.png', 'abc'), filePart('xyz', 'file', 'b.png', 'def'), Buffer.from('--xyz--\r\n')]),
      },
      {
        name: 'multipart with three files',
        headers: { 'content-type': 'multipart/form-data; boundary=xyz' },
        body: Buffer.concat([Buffer.from(part('xyz', 'target', 'webp')), ...['a', 'b', 'c'].map((n) => filePart('xyz', 'file', `${n}.png`, 'abc')), Buffer.from('--xyz--\r\n')]),
      },
      { name: 'empty multipart', ...multipart('xyz', '--xyz--\r\n') },
    ];

    for (const c of cases) {
      it(c.name, async () => {
        const raw = await rawRequest(daemon, { method: 'POST', path: '/conversions', headers: c.headers, body: c.body });
        assert.ok(raw.status >= 400 && raw.status < 500, `${c.name}: ${raw.status} ${raw.text.slice(0, 300)}`);
        assertError(asAnswer(raw), raw.status, (raw.json as { error: { code: string } }).error.code);
        assert.ok(['validation_failed', 'unsupported_conversion', 'file_too_large'].includes((raw.json as { error: { code: string } }).error.code), raw.text.slice(0, 300));
        await assertAlive(daemon);
        assert.deepEqual(await spoolFiles(daemon.dataDir), [], 'no upload is left in the spool');
      });
    }

    it('an upload the client abandons halfway leaves nothing behind', async () => {
      const url = new URL(`${daemon.baseUrl}/conversions`);
      await new Promise<void>((resolve) => {
        const req = httpRequest({
          host: url.hostname, port: url.port, path: url.pathname, method: 'POST',
          headers: { authorization: `Bearer ${daemon.apiKey}`, 'content-type': 'multipart/form-data; boundary=xyz' },
        });
        req.on('error', () => resolve());
        req.write(part('xyz', 'target', 'webp'));
        req.write('--xyz\r\ncontent-disposition: form-data; name="file"; filename="big.png"\r\n\r\n');
        req.write(Buffer.alloc(256 * 1024, 7), () => setTimeout(() => {
          req.destroy();
          resolve();
        }, 100));
      });
      // The daemon notices the abort asynchronously.
      for (let i = 0; i < 100 && (await spoolFiles(daemon.dataDir)).length > 0; i++) await new Promise((r) => setTimeout(r, 20));
      assert.deepEqual(await spoolFiles(daemon.dataDir), []);
      await assertAlive(daemon);
    });
  });

  describe('clients that go away do not take the daemon down', () => {
    it('while waiting for a conversion inside the request', async () => {
      const slow = await slowPng(800);
      // Either upload may be created first: look for ours among the newest, not at the top.
      const newest = async () =>
        (await call<{ data: PublicConversion[] }>(daemon, '/conversions?limit=5')).body.data.find((c) => c.original_name === 'leaving.png');
      // Two requests wait for their conversions; the client of the second hangs up once its
      // conversion exists. The first must be answered as usual, the second conversion go on.
      const staying = submitFile(daemon, { target: 'avif', wait: '30' }, { data: slow, name: 'staying.png' });
      const controller = new AbortController();
      const leaving = call(daemon, '/conversions', { method: 'POST', body: form({ target: 'avif', wait: '30' }, { data: slow, name: 'leaving.png' }), signal: controller.signal });
      let abandoned: PublicConversion | undefined;
      for (let i = 0; i < 500 && abandoned?.original_name !== 'leaving.png'; i++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        abandoned = await newest();
      }
      assert.equal(abandoned?.original_name, 'leaving.png');
      controller.abort();
      await assert.rejects(leaving);
      await assertAlive(daemon);
      const answered = await staying;
      assert.equal(answered.status, 200);
      assert.equal(answered.body.status, 'succeeded');
      assert.equal((await waitForEnd(daemon, abandoned!.id)).status, 'succeeded', 'the conversion goes on without its client');
    });

    it('in the middle of a download', async () => {
      const big = await submitFile(daemon, { target: 'png', wait: '30' }, { data: await slowPng(1500), name: 'big.png' });
      assert.equal(big.body.status, 'succeeded');
      assert.ok(big.body.result!.size > 4 * 1024 * 1024);
      for (let i = 0; i < 5; i++) {
        const controller = new AbortController();
        const response = await fetch(`${daemon.baseUrl}/conversions/${big.body.id}/download`, { headers: { authorization: `Bearer ${daemon.apiKey}` }, signal: controller.signal });
        const reader = response.body!.getReader();
        await reader.read();
        controller.abort();
        await reader.read().catch(() => undefined);
      }
      await assertAlive(daemon);
      const whole = await download(daemon, big.body.id);
      assert.equal(whole.bytes.length, big.body.result!.size);
    });
  });

  it('a good request still works after all of the above', async () => {
    const made = await submitFile(daemon, { target: 'webp', wait: '20' }, { data: image, name: 'after.png' });
    assert.equal(made.status, 200);
    assert.equal(made.body.status, 'succeeded');
    assert.equal((await download(daemon, made.body.id)).status, 200);
    assert.equal((await waitForEnd(daemon, made.body.id)).status, 'succeeded');
  });

  // Last: it switches the whole API off.
  it('503 api_disabled with Retry-After while maintenance is on, for every call', async () => {
    const on = await convdAdmin(daemon.dataDir, ['maintenance', 'on', '--retry-after', '120', '--json']);
    assert.equal(on.code, 0, on.stderr);
    for (const [method, path] of [['GET', '/account'], ['GET', '/formats'], ['POST', '/conversions'], ['GET', `/conversions/${failed.id}`], ['DELETE', `/conversions/${failed.id}`]] as const) {
      const got = await call(daemon, path, { method });
      const error = assertError(got, 503, 'api_disabled');
      assert.equal(got.headers.get('retry-after'), '120');
      assert.match(error.message, /120/);
    }
    // Before authentication: even a caller without a key learns the API is off.
    assertError(await call(daemon, '/account', { key: null }), 503, 'api_disabled');
    const german = assertError(await call(daemon, '/account', { headers: { 'accept-language': 'de' } }), 503, 'api_disabled');
    assert.match(german.message, /vorübergehend nicht verfügbar/);

    const off = await convdAdmin(daemon.dataDir, ['maintenance', 'off', '--json']);
    assert.equal(off.code, 0, off.stderr);
    assert.equal((await call(daemon, '/account')).status, 200);
  });
});
