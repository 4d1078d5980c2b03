/**
 * POST /conversions (and /convert), GET /conversions/{id} and the download over real HTTP: every
 * field of the conversion and result objects (spec 2.1, 2.2), the three content types, options
 * flat and in bracket form, every way the source is found, image outputs decoded with sharp, and
 * the download's headers and ranges.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import sharp, { type Metadata } from 'sharp';
import {
  call, download, InputServer, png, submitFile, submitJson, submitUrlencoded,
  type PublicConversion,
} from '../helpers/api-support.ts';
import { startDaemon, type DaemonHandle } from '../helpers/daemon.ts';

const CONVERSION_FIELDS = [
  'id', 'object', 'status', 'source', 'target', 'variant', 'options', 'original_name', 'input_size', 'progress',
  'credits', 'created_at', 'started_at', 'finished_at', 'result', 'error', 'links',
  // This service's own, additive: what to know of a result (a font set in another).
  'warnings',
];
const RESULT_FIELDS = ['filename', 'size', 'mime', 'expires_at', 'download_url'];
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

/**
 * A HEAD request on a raw socket, two requests on one connection (the second a GET of /v1/formats):
 * body bytes after a HEAD answer would be read as the start of the second answer.
 */
async function headThenGet(daemon: DaemonHandle, path: string, headers: Record<string, string>): Promise<{ head: string; rest: string }> {
  const { hostname, port } = new URL(daemon.url);
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('');
  const socket = connect(Number(port), hostname);
  socket.write(`HEAD ${path} HTTP/1.1\r\nHost: ${hostname}\r\n${lines}\r\n`);
  socket.write(`GET /v1/formats HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${daemon.apiKey}\r\nConnection: close\r\n\r\n`);
  const chunks: Buffer[] = [];
  for await (const chunk of socket) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('latin1');
  const end = text.indexOf('\r\n\r\n');
  return { head: text.slice(0, end), rest: text.slice(end + 4) };
}

const headerOf = (head: string, name: string) => new RegExp(`^${name}: (.*)$`, 'im').exec(head)?.[1]?.trim();

/** Submits a file and waits (inside the request) for the end state. */
async function convert(daemon: DaemonHandle, fields: Record<string, string>, data: Buffer, name = 'photo.png'): Promise<PublicConversion> {
  const got = await submitFile(daemon, { wait: '20', ...fields }, { data, name });
  assert.equal(got.status, 200, JSON.stringify(got.body));
  assert.equal(got.body.status, 'succeeded', JSON.stringify(got.body));
  return got.body;
}

async function outputOf(daemon: DaemonHandle, conversion: PublicConversion): Promise<Metadata> {
  const file = await download(daemon, conversion.id);
  assert.equal(file.status, 200);
  return sharp(file.bytes).metadata();
}

describe('conversions over HTTP', () => {
  let daemon: DaemonHandle;
  const inputs = new InputServer();
  let image: Buffer;

  before(async () => {
    // Private URLs allowed: URL inputs (urlencoded and JSON requests) come from a local server.
    [daemon] = await Promise.all([startDaemon({ args: ['--allow-private-urls'] }), inputs.start()]);
    image = await png(40, 30);
    inputs.serve('/images/photo.png', image, { contentType: 'image/png' });
    inputs.serve('/images/no-extension', image, { contentType: 'image/png' });
  });
  after(async () => {
    await inputs.stop();
    await daemon.dispose();
  });

  it('multipart upload: every field of the conversion and of its result', async () => {
    const before = Date.now();
    const conversion = await convert(daemon, { target: 'webp' }, image);
    assert.deepEqual(Object.keys(conversion).sort(), [...CONVERSION_FIELDS].sort());
    assert.match(conversion.id, /^cnv_[0-9a-z]{26}$/);
    assert.equal(conversion.object, 'conversion');
    assert.equal(conversion.source, 'png');
    assert.equal(conversion.target, 'webp');
    assert.equal(conversion.variant, null);
    // The options that were applied: defaults included.
    assert.deepEqual(conversion.options, { quality: 80, fit: 'inside', strip: true });
    assert.equal(conversion.original_name, 'photo.png');
    assert.equal(conversion.input_size, image.length);
    assert.equal(conversion.progress, 100);
    assert.equal(conversion.credits, 0, 'the bootstrap account is unmetered');
    assert.equal(conversion.error, null);
    for (const field of ['created_at', 'started_at', 'finished_at'] as const) assert.match(conversion[field] ?? '', ISO, field);
    const created = Date.parse(conversion.created_at);
    assert.ok(created >= before - 1000 && created <= Date.now() + 1000);
    assert.ok(conversion.created_at <= conversion.started_at! && conversion.started_at! <= conversion.finished_at!);

    const self = `${daemon.baseUrl}/conversions/${conversion.id}`;
    assert.deepEqual(conversion.links, { self, download: `${self}/download` });
    const result = conversion.result!;
    assert.deepEqual(Object.keys(result).sort(), [...RESULT_FIELDS].sort());
    assert.equal(result.filename, 'photo.webp');
    assert.equal(result.mime, 'image/webp');
    assert.equal(result.download_url, `${self}/download`);
    assert.match(result.expires_at, ISO);
    // 24 hours (result_ttl_hours) after the end.
    assert.ok(Math.abs(Date.parse(result.expires_at) - Date.parse(conversion.finished_at!) - 24 * 3_600_000) < 5_000);

    const file = await download(daemon, conversion.id);
    assert.equal(file.bytes.length, result.size);
    const meta = await sharp(file.bytes).metadata();
    assert.deepEqual([meta.format, meta.width, meta.height], ['webp', 40, 30]);

    // GET answers the same object.
    const got = await call(daemon, `/conversions/${conversion.id}`);
    assert.equal(got.status, 200);
    assert.deepEqual(got.body, conversion);
    assert.equal(got.headers.get('content-language'), 'en');
  });

  it('POST /convert is the same endpoint', async () => {
    const got = await submitFile(daemon, { target: 'jpg', wait: '20' }, { data: image, name: 'a.png' }, {}, '/convert');
    assert.equal(got.status, 200, JSON.stringify(got.body));
    assert.equal(got.body.target, 'jpg');
    assert.equal(got.body.result?.mime, 'image/jpeg');
    assert.equal((await outputOf(daemon, got.body)).format, 'jpeg');
  });

  it('application/x-www-form-urlencoded with a url input, options flat and in bracket form', async () => {
    const url = `${inputs.origin}/images/photo.png`;
    const flat = await submitUrlencoded(daemon, { target: 'webp', url, quality: '55', width: '20', wait: '20' });
    const bracket = await submitUrlencoded(daemon, { target: 'webp', url, 'options[quality]': '55', 'options[width]': '20', wait: '20' });
    for (const got of [flat, bracket]) {
      assert.equal(got.status, 200, JSON.stringify(got.body));
      assert.equal(got.body.status, 'succeeded', JSON.stringify(got.body));
      assert.equal(got.body.source, 'png', 'from the URL path');
      assert.equal(got.body.original_name, 'photo.png');
      assert.equal(got.body.input_size, image.length);
      assert.deepEqual(got.body.options, { quality: 55, width: 20, fit: 'inside', strip: true });
      const meta = await outputOf(daemon, got.body);
      assert.deepEqual([meta.format, meta.width, meta.height], ['webp', 20, 15]);
    }
  });

  it('application/json with typed values, options as an object or flat, charset parameter allowed', async () => {
    const url = `${inputs.origin}/images/photo.png`;
    const nested = await submitJson(daemon, { target: 'png', url, options: { height: 15, strip: false }, wait: 20 });
    const flat = await submitJson(daemon, { target: 'png', url, height: 15, strip: 'false', wait: 20 });
    const charset = await call(daemon, '/conversions', {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=utf-8' },
      body: JSON.stringify({ target: 'png', url, options: { height: '15', strip: 'no' }, wait: '20' }),
    });
    for (const got of [nested, flat, charset]) {
      assert.equal(got.status, 200, JSON.stringify(got.body));
      assert.deepEqual(got.body.options, { height: 15, strip: false, fit: 'inside' });
      const meta = await outputOf(daemon, got.body);
      assert.deepEqual([meta.format, meta.width, meta.height], ['png', 20, 15]);
    }
  });

  it('multipart: options flat and in bracket form give the same conversion', async () => {
    const flat = await convert(daemon, { target: 'jpg', quality: '40', width: '10', fit: 'fill', height: '10' }, image);
    const bracket = await convert(daemon, { target: 'jpg', 'options[quality]': '40', 'options[width]': '10', 'options[fit]': 'fill', 'options[height]': '10' }, image);
    for (const conversion of [flat, bracket]) {
      assert.deepEqual(conversion.options, { quality: 40, width: 10, height: 10, fit: 'fill', strip: true, background: 'white' });
      const meta = await outputOf(daemon, conversion);
      assert.deepEqual([meta.format, meta.width, meta.height], ['jpeg', 10, 10]);
    }
  });

  describe('the source format', () => {
    it('comes from the file name (any case, aliases normalised)', async () => {
      const jpeg = await sharp(image).jpeg().toBuffer();
      const upper = await convert(daemon, { target: 'webp' }, image, 'SHOT.PNG');
      const alias = await convert(daemon, { target: 'webp' }, jpeg, 'scan.jpeg');
      assert.equal(upper.source, 'png');
      assert.equal(alias.source, 'jpg');
      assert.equal(alias.original_name, 'scan.jpeg');
      assert.equal(alias.result?.filename, 'scan.webp');
    });

    it('comes from the `source` field, which wins over the file name', async () => {
      const conversion = await convert(daemon, { target: 'webp', source: 'PNG' }, image, 'export.bin');
      assert.equal(conversion.source, 'png');
      assert.equal(conversion.original_name, 'export.bin');
      assert.equal(conversion.result?.filename, 'export.webp');
    });

    it('comes from content sniffing for a PNG uploaded without an extension', async () => {
      const conversion = await convert(daemon, { target: 'gif' }, image, 'clipboard');
      assert.equal(conversion.source, 'png');
      assert.equal(conversion.result?.filename, 'clipboard.gif');
      assert.equal((await outputOf(daemon, conversion)).format, 'gif');
      // An SVG has no magic number; it is recognised from its text.
      const svg = Buffer.from('<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="12" height="8"><rect width="12" height="8" fill="red"/></svg>');
      const fromSvg = await convert(daemon, { target: 'png' }, svg, 'drawing');
      assert.equal(fromSvg.source, 'svg');
      const meta = await outputOf(daemon, fromSvg);
      assert.deepEqual([meta.format, meta.width, meta.height], ['png', 12, 8]);
    });

    it('comes from the URL path, and from the `source` field when the URL has no extension', async () => {
      const fromPath = await submitJson(daemon, { target: 'webp', url: `${inputs.origin}/images/photo.png?size=large#top`, wait: 20 });
      assert.equal(fromPath.status, 200, JSON.stringify(fromPath.body));
      assert.equal(fromPath.body.source, 'png');
      const fromField = await submitJson(daemon, { target: 'webp', url: `${inputs.origin}/images/no-extension`, source: 'png', filename: 'named.png', wait: 20 });
      assert.equal(fromField.status, 200, JSON.stringify(fromField.body));
      assert.equal(fromField.body.status, 'succeeded');
      assert.equal(fromField.body.source, 'png');
      assert.equal(fromField.body.original_name, 'named.png', 'the filename field names a URL input');
      assert.equal(fromField.body.result?.filename, 'named.webp');
    });
  });

  it('original_name and the result\'s filename lose bidi controls, U+2028/U+2029 and C1 controls, from an upload and from the filename field', async () => {
    // U+202E shown raw would make the first read `invoiceexe.png`.
    const hostile = 'invoice\u202egnp\u2066.\u2069exe\u2028\u2029\u0085\u009b\u200f\u061c.png';
    const uploaded = await convert(daemon, { target: 'webp' }, image, hostile);
    assert.equal(uploaded.original_name, 'invoicegnp.exe.png');
    assert.equal(uploaded.result?.filename, 'invoicegnp.exe.webp');
    const named = await submitJson(daemon, { target: 'webp', url: `${inputs.origin}/images/photo.png`, filename: `\u202dreport\u202c\u200e.png`, wait: 20 });
    assert.equal(named.status, 200, JSON.stringify(named.body));
    assert.equal(named.body.original_name, 'report.png');
  });

  it('every image target decodes as that format, with width and height as the resize options say', async () => {
    const cases: { target: string; options: Record<string, string>; format: string; mime: string; size: [number, number] }[] = [
      { target: 'webp', options: { width: '20' }, format: 'webp', mime: 'image/webp', size: [20, 15] },
      { target: 'png', options: { height: '15' }, format: 'png', mime: 'image/png', size: [20, 15] },
      { target: 'jpg', options: { width: '20', height: '20', fit: 'cover' }, format: 'jpeg', mime: 'image/jpeg', size: [20, 20] },
      { target: 'png', options: { width: '20', height: '20', fit: 'contain' }, format: 'png', mime: 'image/png', size: [20, 20] },
      { target: 'tiff', options: { width: '25', height: '10', fit: 'fill' }, format: 'tiff', mime: 'image/tiff', size: [25, 10] },
      { target: 'gif', options: { width: '20', height: '20' }, format: 'gif', mime: 'image/gif', size: [20, 15] },
      { target: 'avif', options: { width: '80', height: '80', fit: 'outside' }, format: 'heif', mime: 'image/avif', size: [107, 80] },
      { target: 'jpg', options: {}, format: 'jpeg', mime: 'image/jpeg', size: [40, 30] },
    ];
    const done = await Promise.all(cases.map((c) => convert(daemon, { target: c.target, ...c.options }, image)));
    for (const [index, c] of cases.entries()) {
      const conversion = done[index]!;
      assert.equal(conversion.result?.mime, c.mime, c.target);
      assert.match(conversion.result?.filename ?? '', new RegExp(`^photo\\.${c.target}$`));
      const meta = await outputOf(daemon, conversion);
      assert.deepEqual([meta.format, meta.width, meta.height], [c.format, ...c.size], `${c.target} ${JSON.stringify(c.options)}`);
      if (c.target === 'avif') assert.equal(meta.compression, 'av1');
    }
  });

  it('quality and strip change the output', async () => {
    const noisy = await sharp({ create: { width: 64, height: 64, channels: 3, background: '#777', noise: { type: 'gaussian', mean: 128, sigma: 60 } } })
      .withExif({ IFD0: { Copyright: 'convd test' } })
      .jpeg({ quality: 95 })
      .toBuffer();
    const [low, high, stripped, kept] = await Promise.all([
      convert(daemon, { target: 'jpg', quality: '5' }, noisy, 'noise.jpg'),
      convert(daemon, { target: 'jpg', quality: '95' }, noisy, 'noise.jpg'),
      convert(daemon, { target: 'jpg' }, noisy, 'noise.jpg'),
      convert(daemon, { target: 'jpg', strip: 'false' }, noisy, 'noise.jpg'),
    ]);
    assert.ok(low.result!.size < high.result!.size / 2, `quality 5 (${low.result!.size} B) is far smaller than 95 (${high.result!.size} B)`);
    assert.equal((await outputOf(daemon, stripped)).exif, undefined, 'metadata removed by default');
    const keptExif = (await outputOf(daemon, kept)).exif;
    assert.ok(keptExif?.includes('convd test'), 'strip=false keeps the EXIF data');
  });

  it('an animated GIF stays animated where the target can hold it', async () => {
    const frames = await Promise.all(['red', 'green', 'blue'].map((background) => png(16, 12, background)));
    const gif = await sharp(frames, { join: { animated: true } }).gif().toBuffer();
    const [toWebp, toPng] = await Promise.all([
      convert(daemon, { target: 'webp' }, gif, 'anim.gif'),
      convert(daemon, { target: 'png' }, gif, 'anim.gif'),
    ]);
    const webp = await outputOf(daemon, toWebp);
    assert.deepEqual([webp.format, webp.pages, webp.width], ['webp', 3, 16]);
    const still = await outputOf(daemon, toPng);
    assert.deepEqual([still.format, still.pages ?? 1, still.width, still.height], ['png', 1, 16, 12]);
  });

  describe('download', () => {
    let conversion: PublicConversion;
    let whole: Buffer;

    before(async () => {
      conversion = await convert(daemon, { target: 'png' }, image, 'Grüße 日本.png');
      whole = (await download(daemon, conversion.id)).bytes;
    });

    it('sends the file as application/octet-stream with Content-Disposition (filename*) and Content-Length', async () => {
      assert.equal(conversion.result?.filename, 'Grüße 日本.png');
      const file = await download(daemon, conversion.id);
      assert.equal(file.status, 200);
      assert.equal(file.headers.get('content-type'), 'application/octet-stream');
      assert.equal(file.headers.get('content-length'), String(conversion.result!.size));
      assert.equal(file.headers.get('accept-ranges'), 'bytes');
      const disposition = file.headers.get('content-disposition') ?? '';
      assert.match(disposition, /^attachment;/);
      // An ASCII fallback without quotes inside, and the exact name in RFC 5987 form.
      const fallback = /filename="([^"]*)"/.exec(disposition)?.[1];
      assert.ok(fallback && /^[\x20-\x7e]+$/.test(fallback), disposition);
      const encoded = /filename\*=UTF-8''(\S+)/.exec(disposition)?.[1];
      assert.ok(encoded, disposition);
      assert.equal(decodeURIComponent(encoded), 'Grüße 日本.png');
      assert.deepEqual(file.bytes, whole);
      assert.equal((await sharp(file.bytes).metadata()).format, 'png');
    });

    it('answers HEAD with the headers of GET and no body (curl -I); a Range does not apply to it', async () => {
      const auth = { Authorization: `Bearer ${daemon.apiKey}` };
      const whole = await headThenGet(daemon, `/v1/conversions/${conversion.id}/download`, auth);
      assert.match(whole.head, /^HTTP\/1\.1 200/);
      assert.equal(headerOf(whole.head, 'content-length'), String(conversion.result!.size));
      assert.equal(headerOf(whole.head, 'content-type'), 'application/octet-stream');
      assert.match(headerOf(whole.head, 'content-disposition') ?? '', /^attachment;/);
      // The next answer on the connection starts right where the HEAD answer's headers end.
      assert.match(whole.rest, /^HTTP\/1\.1 200/);
      // Range is defined for GET only (RFC 9110, 14.2): a HEAD with one is told the whole file.
      const part = await headThenGet(daemon, `/v1/conversions/${conversion.id}/download`, { ...auth, Range: 'bytes=0-9' });
      assert.match(part.head, /^HTTP\/1\.1 200/);
      assert.equal(headerOf(part.head, 'content-length'), String(conversion.result!.size));
      assert.equal(headerOf(part.head, 'content-range'), undefined);
      assert.match(part.rest, /^HTTP\/1\.1 200/);
    });

    it('answers HEAD on the other GET routes as GET, without a body; 401 and 405 as GET would', async () => {
      const auth = { Authorization: `Bearer ${daemon.apiKey}` };
      for (const path of [`/v1/conversions/${conversion.id}`, '/v1/conversions?limit=1', '/v1/formats/png', '/v1/account']) {
        const answer = await headThenGet(daemon, path, auth);
        assert.match(answer.head, /^HTTP\/1\.1 200/, path);
        assert.match(headerOf(answer.head, 'content-type') ?? '', /^application\/json/, path);
        assert.match(answer.rest, /^HTTP\/1\.1 200/, `${path}: a body was sent after the HEAD answer`);
      }
      const anonymous = await headThenGet(daemon, `/v1/conversions/${conversion.id}`, {});
      assert.match(anonymous.head, /^HTTP\/1\.1 401/);
      assert.match(anonymous.rest, /^HTTP\/1\.1 200/);
      const postOnly = await headThenGet(daemon, '/v1/convert', auth);
      assert.match(postOnly.head, /^HTTP\/1\.1 405/);
      assert.match(postOnly.rest, /^HTTP\/1\.1 200/);
    });

    it('can be repeated', async () => {
      const again = await download(daemon, conversion.id);
      assert.equal(again.status, 200);
      assert.deepEqual(again.bytes, whole);
    });

    it('honours Range: 206 with Content-Range for a range and a suffix', async () => {
      const part = await download(daemon, conversion.id, { range: 'bytes=0-9' });
      assert.equal(part.status, 206);
      assert.equal(part.headers.get('content-range'), `bytes 0-9/${whole.length}`);
      assert.equal(part.headers.get('content-length'), '10');
      assert.deepEqual(part.bytes, whole.subarray(0, 10));
      // The PNG signature proves the bytes are the file's own.
      assert.deepEqual(part.bytes.subarray(0, 8), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));

      const tail = await download(daemon, conversion.id, { range: 'bytes=-12' });
      assert.equal(tail.status, 206);
      assert.equal(tail.headers.get('content-range'), `bytes ${whole.length - 12}-${whole.length - 1}/${whole.length}`);
      assert.deepEqual(tail.bytes, whole.subarray(whole.length - 12));

      const open = await download(daemon, conversion.id, { range: 'bytes=20-' });
      assert.equal(open.status, 206);
      assert.deepEqual(open.bytes, whole.subarray(20));
    });

    it('ignores a Range it does not serve and sends the whole file', async () => {
      for (const range of ['bytes=0-1,4-5', 'lines=1-2', `bytes=${whole.length + 10}-`]) {
        const file = await download(daemon, conversion.id, { range });
        assert.equal(file.status, 200, range);
        assert.deepEqual(file.bytes, whole, range);
      }
    });
  });
});
