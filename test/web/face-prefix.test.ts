/**
 * The web pages behind a proxy that serves convd under a path (public_url http://host/convd, the
 * proxy taking /convd off, as nginx's `location /convd/ { proxy_pass http://convd/; }` does): in
 * Debian's Chromium, the login link, the set-password form, the navigation, the convert page's
 * script (formats, the upload, the poll, the download link), the conversions page and sign-out all
 * stay under /convd, the style sheet and script load from there, and the cookies carry its path.
 * A file of a kind convd does not convert is named by its extension on the convert page.
 * The proxy answers 404 to anything outside /convd, so a link that forgot the path fails the test.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { createServer, request as forward, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import sharp from 'sharp';
import { png } from '../helpers/api-support.ts';
import { launchBrowser } from '../helpers/browser.ts';
import { convdAdmin, startDaemon, type DaemonHandle } from '../helpers/daemon.ts';
import { pagesBasePath } from '../../daemon/base-url.ts';

const PREFIX = '/convd';
const PASSWORD = 'correct horse battery';

/** A proxy on loopback passing PREFIX/... to `target()` without the prefix; anything else is a 404 it counts. */
function prefixProxy(target: () => URL): { server: Server; strays: string[] } {
  const strays: string[] = [];
  const server = createServer((req, res) => {
    const path = req.url ?? '/';
    if (path !== PREFIX && !path.startsWith(`${PREFIX}/`) && !path.startsWith(`${PREFIX}?`)) {
      strays.push(`${req.method} ${path}`);
      res.writeHead(404).end('not under the prefix');
      return;
    }
    const to = target();
    const upstream = forward({ host: to.hostname, port: to.port, method: req.method, path: path.slice(PREFIX.length) || '/', headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  return { server, strays };
}

describe('the pages\' path from public_url', () => {
  it('is its path, without a trailing slash or a /v1 the API would drop too', () => {
    const cases: [string | undefined, string][] = [
      [undefined, ''], ['https://convert.example.com', ''], ['https://convert.example.com/', ''], ['https://convert.example.com/v1', ''],
      ['https://example.com/convd', '/convd'], ['https://example.com/convd/', '/convd'], ['https://example.com/convd/v1/', '/convd'],
      ['https://example.com/tools/convert%20files', '/tools/convert%20files'],
    ];
    for (const [url, base] of cases) assert.equal(pagesBasePath(url), base, String(url));
  });
});

describe('the web pages under a path of a proxy', () => {
  let daemon: DaemonHandle;
  let browser: Browser;
  let proxy: ReturnType<typeof prefixProxy>;
  let front: string;
  before(async () => {
    proxy = prefixProxy(() => new URL(daemon.url));
    await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve));
    front = `http://127.0.0.1:${(proxy.server.address() as AddressInfo).port}${PREFIX}`;
    daemon = await startDaemon({ args: ['--public-url', front] });
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await daemon?.dispose();
    proxy?.server.close();
  });

  it('link, password, pages, a conversion and sign-out all stay under the path', async () => {
    const made = await convdAdmin(daemon.dataDir, ['accounts', 'create', '--plan', 'lite', '--name', 'nina', '--login-link', '--json']);
    assert.equal(made.code, 0, made.stderr);
    const link = (made.json as { login_link: { url: string } }).login_link.url;
    assert.ok(link.startsWith(`${front}/link/cwl_`), link);

    const context = await browser.newContext({ acceptDownloads: true });
    const page = await context.newPage();
    const failed: string[] = [];
    page.on('response', (response) => {
      if (response.status() >= 400) failed.push(`${response.status()} ${response.url()}`);
    });
    await page.goto(link);
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await page.getByLabel('Password, again').fill(PASSWORD);
    await page.getByRole('button', { name: 'Save password and sign in' }).click();
    await page.waitForURL(`${front}/account`);
    // The style sheet applied: its rules are the page's, not the browser's defaults.
    assert.equal(await page.evaluate('document.styleSheets.length > 0 && document.styleSheets[0].cssRules.length > 0'), true);
    const cookies = await context.cookies();
    assert.equal(cookies.find((c) => c.name === 'convd_session')?.path, PREFIX, 'the session cookie goes to the path only');

    await page.getByRole('link', { name: 'Conversions' }).click();
    await page.waitForURL(`${front}/conversions`);
    await page.getByRole('link', { name: 'Convert' }).click();
    await page.waitForURL(`${front}/convert`);
    // A kind convd does not convert (a LibreOffice template) is named as the file has it.
    await page.setInputFiles('#files', { name: 'letter.lwp', mimeType: 'application/octet-stream', buffer: Buffer.from('PK') });
    await page.getByText('Files of kind .lwp cannot be converted here.').waitFor();
    await page.setInputFiles('#files', { name: 'prefixed.png', mimeType: 'image/png', buffer: await png(120, 80) });
    await page.locator('#target option[value=webp]').waitFor({ state: 'attached' });
    await page.getByLabel('Convert to').selectOption('webp');
    await page.getByRole('button', { name: 'Convert', exact: true }).click();
    const result = page.locator('#jobs li a', { hasText: 'Download' });
    await result.waitFor({ timeout: 30_000 });
    assert.ok((await result.getAttribute('href'))!.startsWith(`${PREFIX}/conversions/`));
    const [download] = await Promise.all([page.waitForEvent('download'), result.click()]);
    const meta = await sharp(await readFile((await download.path())!)).metadata();
    assert.deepEqual([meta.format, meta.width, meta.height], ['webp', 120, 80]);

    // The language switch and the conversions page's rows keep the path too.
    await page.goto(`${front}/conversions`);
    await page.getByRole('link', { name: 'Deutsch' }).click();
    await page.waitForURL(`${front}/conversions?lang=de`);
    await page.getByRole('button', { name: 'Abmelden' }).click();
    await page.waitForURL(`${front}/signin`);
    // The one error asked for: the formats of .lwp (Lotus Word Pro), which convd does not know.
    assert.deepEqual(failed, [`404 ${front}/web/api/formats/lwp`], 'no other address of the pages answered an error');
    assert.deepEqual(proxy.strays, [], 'nothing asked for outside the path');
    await context.close();
  });
});
