/**
 * The web face in a real browser (Debian's Chromium through playwright-core) against a
 * real convd on 127.0.0.1: the owner's one-time link -> a password -> the account page; sign out
 * and in again; a key made there (shown once, then only its prefix) works on /v1 and, revoked
 * there, gets 401; the webhook secret revealed and rotated (the admin command sees the new one, a
 * delivery after it verifies with it, the page lists the delivery and sends it again);
 * the conversions page (progress moving without a reload, cancel, download, the status filter).
 * And what must not work: a session on /v1, a key as a session, a form without the session's
 * token or from another origin, a second account revoking the first's key, a used or replaced
 * link, endless password guessing. Every page carries the security headers; German by the
 * browser's language; screenshots of each page at 1280 and 360 px wide under test-results/, and
 * each page checked by axe-core (WCAG 2.1 A and AA: no violation).
 */
import assert from 'node:assert/strict';
import { mkdir, readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import sharp from 'sharp';
import { call, png, slowPng, submitFile } from '../helpers/api-support.ts';
import { scannedLines, scannedPdf } from '../helpers/scan-pages.ts';
import { verifyWebhook } from '../../src/webhooks/index.ts';
import { waitUntil } from '../helpers/ops-support.ts';
import { accessibilityViolations, launchBrowser } from '../helpers/browser.ts';
import { convdAdmin, ROOT, startDaemon, type DaemonHandle } from '../helpers/daemon.ts';

const SCREENSHOTS = join(ROOT, 'test-results', 'web-face');
const PASSWORD = 'correct horse battery';

interface MadeAccount {
  id: string;
  link: string;
}

async function accountWithLink(daemon: DaemonHandle, name: string, plan = 'lite'): Promise<MadeAccount> {
  const made = await convdAdmin(daemon.dataDir, ['accounts', 'create', '--plan', plan, '--name', name, '--login-link', '--json']);
  assert.equal(made.code, 0, made.stderr);
  const json = made.json as { id: string; login_link: { url: string; expires_at: string } };
  assert.ok(json.login_link.url.startsWith(`${daemon.url}/link/cwl_`), json.login_link.url);
  return { id: json.id, link: json.login_link.url };
}

/** Screenshots at both widths, and the accessibility check (axe-core, WCAG 2.1 A and AA) of the page. */
async function shoot(page: Page, name: string): Promise<void> {
  assert.deepEqual(await accessibilityViolations(page), [], `${name}: accessibility`);
  await mkdir(SCREENSHOTS, { recursive: true });
  for (const width of [1280, 360]) {
    await page.setViewportSize({ width, height: 900 });
    const path = join(SCREENSHOTS, `${name}-${width}.png`);
    await page.screenshot({ path, fullPage: true });
    // No layout wider than the window at 360 px.
    const overflow = await page.evaluate('document.documentElement.scrollWidth - window.innerWidth');
    assert.ok(Number(overflow) <= 0, `${name} at ${width} px is ${String(overflow)} px wider than the window`);
    process.stdout.write(`# screenshot ${path}\n`);
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

async function setPassword(page: Page, link: string, password = PASSWORD): Promise<void> {
  await page.goto(link);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByLabel('Password, again').fill(password);
  await page.getByRole('button', { name: 'Save password and sign in' }).click();
  await page.waitForURL(/\/account$/);
}

async function signIn(page: Page, baseUrl: string, name: string, password = PASSWORD): Promise<void> {
  await page.goto(`${baseUrl}/signin`);
  await page.getByLabel('Account name or id').fill(name);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

interface SignedIn {
  context: BrowserContext;
  page: Page;
  /** The session cookie's value, and the token its page's forms carry. */
  session: string;
  csrf: string;
}

/** A browser of its own, signed in as `name`, on the account page. */
async function signedIn(browser: Browser, baseUrl: string, name: string, options: Parameters<Browser['newContext']>[0] = {}): Promise<SignedIn> {
  const context = await browser.newContext(options);
  const page = await context.newPage();
  await signIn(page, baseUrl, name);
  await page.waitForURL(/\/account$/);
  return sessionOf(context, page);
}

async function sessionOf(context: BrowserContext, page: Page): Promise<SignedIn> {
  const session = (await context.cookies()).find((c) => c.name === 'convd_session')!.value;
  return { context, page, session, csrf: (await page.getAttribute('input[name=csrf]', 'value'))! };
}

/** A form's POST sent by hand with a session's cookie (`origin` null: none at all). */
function postForm(baseUrl: string, path: string, session: string, body: Record<string, string>, origin: string | null = baseUrl): Promise<Response> {
  return fetch(`${baseUrl}${path}`, {
    method: 'POST', redirect: 'manual',
    headers: { cookie: `convd_session=${session}`, 'content-type': 'application/x-www-form-urlencoded', ...(origin ? { origin } : {}) },
    body: new URLSearchParams(body),
  });
}

describe('the web face in a browser', () => {
  let daemon: DaemonHandle;
  let browser: Browser;
  let alice: MadeAccount;
  before(async () => {
    // Callbacks to a receiver on loopback, for the delivery test.
    daemon = await startDaemon({ args: ['--allow-insecure-callbacks'] });
    browser = await launchBrowser();
    alice = await accountWithLink(daemon, 'alice');
  });
  after(async () => {
    await browser?.close();
    await daemon?.dispose();
  });

  it('link -> password -> account page; a short password, then the used link, refused in words', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const opened = await page.goto(alice.link);
    assert.equal(opened?.status(), 200);
    await shoot(page, 'set-password');
    await page.getByLabel('Password', { exact: true }).fill('short');
    await page.getByLabel('Password, again').fill('short');
    // The browser's own check (minlength) stops this form: sent by hand, the server says it too.
    const tooShort = await page.evaluate(async (url) => {
      const response = await fetch(url, { method: 'POST', body: new URLSearchParams({ password: 'short', repeated: 'short' }) });
      return { status: response.status, text: await response.text() };
    }, alice.link);
    assert.equal(tooShort.status, 422);
    assert.match(tooShort.text, /at least 10 characters/);
    await setPassword(page, alice.link);
    assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Account: alice');
    assert.match(await page.textContent('main') ?? '', /Plan: Lite/);
    await shoot(page, 'account');
    const again = await page.goto(alice.link);
    assert.equal(again?.status(), 404, 'a link works once');
    assert.match(await page.textContent('main') ?? '', /used already/);
    await context.close();
  });

  it('sign out ends the session on the server; a wrong password is refused, the right one signs in', async () => {
    const { context, page } = await signedIn(browser, daemon.url, 'alice');
    const cookie = (await context.cookies()).find((c) => c.name === 'convd_session')!;
    assert.equal(cookie.httpOnly, true);
    assert.equal(cookie.sameSite, 'Strict');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/signin$/);
    // The old cookie, sent again by hand, opens nothing: the session is gone on the server.
    const replay = await fetch(`${daemon.url}/account`, { headers: { cookie: `convd_session=${cookie.value}` }, redirect: 'manual' });
    assert.equal(replay.status, 303);
    assert.equal(replay.headers.get('location'), '/signin');
    await signIn(page, daemon.url, 'alice', 'not the password');
    assert.match(await page.textContent('[role=alert]') ?? '', /name or the password is wrong/);
    await shoot(page, 'signin-failed');
    await signIn(page, daemon.url, alice.id);
    await page.waitForURL(/\/account$/);
    await context.close();
  });

  it('a key made on the page is shown once, works on /v1, and once revoked there gets 401', async () => {
    const { context, page } = await signedIn(browser, daemon.url, 'alice');
    await page.getByLabel('Name (what the key is for)').fill('ci pipeline');
    await page.getByRole('checkbox', { name: /delete: cancel/ }).check();
    await page.getByRole('button', { name: 'Create key' }).click();
    const key = (await page.textContent('#new-key-value'))!.trim();
    assert.match(key, /^cvk_/);
    await shoot(page, 'key-created');
    const account = await fetch(`${daemon.url}/v1/account`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(account.status, 200);
    assert.equal(((await account.json()) as { plan: { id: string } }).plan.id, 'lite');
    await page.goto(`${daemon.url}/account`);
    const text = await page.textContent('main') ?? '';
    assert.ok(!text.includes(key), 'the key is never shown again');
    assert.ok(text.includes(key.slice(0, 10)), 'only its prefix');
    const row = page.locator('tr', { hasText: key.slice(0, 10) });
    assert.match(await row.textContent() ?? '', /ci pipeline/);
    assert.doesNotMatch(await row.textContent() ?? '', /never/, 'used a moment ago on /v1');
    await page.getByRole('button', { name: `Revoke key ${key.slice(0, 10)}` }).click();
    assert.match(await page.textContent('[role=status]') ?? '', /is revoked/);
    const revoked = await fetch(`${daemon.url}/v1/account`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(revoked.status, 401);
    await context.close();
  });

  it('the webhook secret is revealed on request and rotated; the admin command sees the new one', async () => {
    const { context, page } = await signedIn(browser, daemon.url, 'alice');
    await page.getByRole('button', { name: 'Reveal' }).click();
    const before = (await page.textContent('#secret-value'))!.trim();
    const admin = await convdAdmin(daemon.dataDir, ['webhook-secret', '--account', alice.id, '--json']);
    assert.equal((admin.json as { secret: string }).secret, before);
    await page.getByRole('button', { name: 'Rotate' }).click();
    const after = (await page.textContent('#secret-value'))!.trim();
    assert.notEqual(after, before);
    assert.equal((((await convdAdmin(daemon.dataDir, ['webhook-secret', '--account', alice.id, '--json'])).json) as { secret: string }).secret, after);
    await context.close();
  });

  it('a delivery after the rotation verifies with the new secret; the page lists it and sends it again', async () => {
    const received: { id: string; signature: string; body: string }[] = [];
    const receiver = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        received.push({ id: String(request.headers['x-service-delivery']), signature: String(request.headers['x-service-signature']), body: Buffer.concat(chunks).toString('utf8') });
        response.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', () => resolve()));
    try {
      const { context, page } = await signedIn(browser, daemon.url, 'alice');
      await page.getByRole('button', { name: 'Rotate' }).click();
      const secret = (await page.textContent('#secret-value'))!.trim();
      const made = await convdAdmin(daemon.dataDir, ['keys', 'create', '--account', alice.id, '--json']);
      const client = { baseUrl: daemon.baseUrl, apiKey: (made.json as { key: string }).key };
      const port = (receiver.address() as { port: number }).port;
      const done = await submitFile(client, { target: 'webp', wait: '30', callback_url: `http://127.0.0.1:${port}/hook` }, { data: await png(30, 20), name: 'hooked.png' });
      assert.equal(done.body.status, 'succeeded');
      await waitUntil('the delivery', () => (received.length > 0 ? true : undefined), 20_000);
      assert.equal(verifyWebhook(received[0]!.body, received[0]!.signature, secret).ok, true, 'signed with the rotated secret');
      await page.goto(`${daemon.url}/account`);
      const row = page.locator(`#delivery-${received[0]!.id}`);
      assert.match(await row.textContent() ?? '', /conversion\.succeeded.*delivered.*204/s);
      await shoot(page, 'account-deliveries');
      await row.getByRole('button', { name: /Send again: delivery/ }).click();
      assert.match(await page.textContent('[role=status]') ?? '', /was sent again: 204/);
      assert.equal(received.length, 2);
      assert.equal(received[1]!.id, received[0]!.id, 'the same delivery, sent again');
      await context.close();
    } finally {
      receiver.close();
    }
  });

  it('a session never works on /v1, a key never as a session', async () => {
    const { context, page, session } = await signedIn(browser, daemon.url, 'alice');
    const onApi = await fetch(`${daemon.url}/v1/account`, { headers: { cookie: `convd_session=${session}` } });
    assert.equal(onApi.status, 401);
    const fromPage = await page.evaluate(async () => (await fetch('/v1/account')).status);
    assert.equal(fromPage, 401, 'the browser\'s own cookie does not reach /v1 either');
    const keyAsCookie = await fetch(`${daemon.url}/account`, { headers: { cookie: `convd_session=${daemon.apiKey}` }, redirect: 'manual' });
    assert.equal(keyAsCookie.status, 303);
    await context.close();
  });

  it('forms without the session\'s token, from another origin, or for another account\'s key are refused', async () => {
    const { context, session, csrf } = await signedIn(browser, daemon.url, 'alice');
    const post = (path: string, body: Record<string, string>, origin: string | null) => postForm(daemon.url, path, session, body, origin);
    assert.equal((await post('/account/keys', { scope: 'read' }, daemon.url)).status, 403, 'no token');
    assert.equal((await post('/account/keys', { scope: 'read', csrf: 'x'.repeat(32) }, daemon.url)).status, 403, 'a wrong token');
    assert.equal((await post('/account/keys', { scope: 'read', csrf }, 'https://evil.example')).status, 403, 'another origin');
    assert.equal((await post('/account/keys', { scope: 'read', csrf }, null)).status, 403, 'no origin at all');
    assert.equal((await post('/account/keys', { scope: 'read', csrf }, daemon.url)).status, 200, 'the page\'s own form');

    // Bob, signed in, aims at alice's key by its id.
    const bob = await accountWithLink(daemon, 'bob');
    const bobs = await browser.newContext();
    const bobPage = await bobs.newPage();
    await setPassword(bobPage, bob.link);
    const made = await convdAdmin(daemon.dataDir, ['keys', 'create', '--account', alice.id, '--json']);
    const aliceKey = made.json as { id: string; key: string };
    const asBob = await sessionOf(bobs, bobPage);
    const tampered = await postForm(daemon.url, `/account/keys/${aliceKey.id}/revoke`, asBob.session, { csrf: asBob.csrf });
    assert.equal(tampered.status, 404);
    assert.equal((await fetch(`${daemon.url}/v1/account`, { headers: { authorization: `Bearer ${aliceKey.key}` } })).status, 200, 'alice\'s key still works');
    await bobs.close();
    await context.close();
  });

  it('a new link replaces the unused one; guessing a password is stopped after five failures', async () => {
    const carol = await accountWithLink(daemon, 'carol');
    const newer = await convdAdmin(daemon.dataDir, ['accounts', 'login-link', carol.id, '--json']);
    assert.equal(newer.code, 0, newer.stderr);
    assert.equal((await fetch(carol.link)).status, 404, 'the first link stopped working');
    assert.equal((await fetch((newer.json as { url: string }).url)).status, 200);
    const attempt = () => fetch(`${daemon.url}/signin`, {
      method: 'POST', headers: { origin: daemon.url, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ name: 'carol', password: 'guess guess guess' }),
    });
    const statuses = [];
    for (let i = 0; i < 6; i++) statuses.push((await attempt()).status);
    assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429]);
  });

  it('the conversions page: live progress, cancel, download, and another account sees none of it', async () => {
    const made = await convdAdmin(daemon.dataDir, ['keys', 'create', '--account', alice.id, '--json']);
    const client = { baseUrl: daemon.baseUrl, apiKey: (made.json as { key: string }).key };
    const done = await submitFile(client, { target: 'webp', wait: '30' }, { data: await png(64, 48), name: 'small photo.png' });
    assert.equal(done.body.status, 'succeeded');
    const large = await slowPng(3000);
    const slow = await submitFile(client, { target: 'avif' }, { data: large, name: 'large photo.png' });
    assert.equal(slow.status, 202);
    const other = await submitFile(client, { target: 'avif' }, { data: large, name: 'other photo.png' });
    assert.equal(other.status, 202);
    const { context, page } = await signedIn(browser, daemon.url, 'alice', { acceptDownloads: true });
    await page.getByRole('link', { name: 'Conversions' }).click();
    await page.waitForURL(/\/conversions$/);
    assert.match(await page.textContent(`#row-${slow.body.id}`) ?? '', /large photo\.png.*png → avif/s);
    // A row follows its conversion by itself: cancelled through the API, the page shows it
    // without the test touching the page (the script polls, and reloads once a row ended).
    await call(client, `/conversions/${other.body.id}`, { method: 'DELETE' });
    await page.locator(`#row-${other.body.id} [data-status]`, { hasText: 'cancelled' }).waitFor({ timeout: 20_000 });
    await shoot(page, 'conversions');
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Download the result of small photo.png' }).click()]);
    assert.equal(download.suggestedFilename(), 'small photo.webp');
    const meta = await sharp(await readFile((await download.path())!)).metadata();
    assert.deepEqual([meta.format, meta.width, meta.height], ['webp', 64, 48]);
    await page.getByRole('button', { name: 'Cancel the conversion of large photo.png' }).click();
    assert.match(await page.textContent('[role=status]') ?? '', /large photo\.png is cancelled/);
    assert.equal((await call(client, `/conversions/${slow.body.id}`)).body.status, 'cancelled');
    await page.selectOption('#status', 'succeeded');
    await page.getByRole('button', { name: 'Show' }).click();
    const statuses = await page.locator('tbody tr [data-status]').allTextContents();
    assert.ok(statuses.length >= 1 && statuses.every((status) => status.startsWith('succeeded')), `only succeeded ones: ${statuses.join(', ')}`);
    assert.equal(await page.locator(`#row-${slow.body.id}`).count(), 0, 'not the cancelled one');

    // Bob's session, aimed at alice's conversion by its id.
    const bob = await signedIn(browser, daemon.url, 'bob');
    const bobSession = bob.session;
    await bob.page.goto(`${daemon.url}/conversions`);
    assert.equal(await bob.page.locator(`#row-${done.body.id}`).count(), 0, 'bob\'s list holds none of alice\'s');
    const stolen = await fetch(`${daemon.url}/conversions/${done.body.id}/download`, { headers: { cookie: `convd_session=${bobSession}` } });
    assert.equal(stolen.status, 404);
    const deleted = await postForm(daemon.url, `/conversions/${done.body.id}/delete`, bobSession, { csrf: bob.csrf });
    assert.equal(deleted.status, 404);
    const polled = await fetch(`${daemon.url}/web/api/conversions?ids=${done.body.id}`, { headers: { cookie: `convd_session=${bobSession}` } });
    assert.deepEqual(await polled.json(), { data: [] });
    assert.equal((await call(client, `/conversions/${done.body.id}`)).body.status, 'succeeded', 'untouched');
    // The account page's chart counts today's conversions (its table holds the numbers).
    await page.goto(`${daemon.url}/account`);
    const today = new Date().toISOString().slice(0, 10);
    const listed = await call<{ data: { created_at: string }[] }>(client, '/conversions?limit=100');
    const madeToday = listed.body.data.filter((c) => c.created_at.startsWith(today)).length;
    assert.ok(madeToday >= 3);
    assert.match(await page.locator('details tbody tr', { hasText: today }).textContent() ?? '', new RegExp(`${today}\\s*${madeToday}\\s*`));
    assert.equal(await page.locator('figure.chart svg[role=img]').count(), 2);
    await bob.context.close();
    await context.close();
  });

  it('the convert page: a PNG dropped, WebP chosen, quality on the slider, converted and downloaded', async () => {
    const { context, page } = await signedIn(browser, daemon.url, 'alice', { acceptDownloads: true });
    await page.getByRole('link', { name: 'Convert' }).click();
    await page.waitForURL(/\/convert$/);
    const image = await png(200, 150);
    const dropped = await page.evaluateHandle(`(() => {
      const bytes = Uint8Array.from(atob('${image.toString('base64')}'), (c) => c.charCodeAt(0));
      const transfer = new DataTransfer();
      transfer.items.add(new File([bytes], 'dropped photo.png', { type: 'image/png' }));
      return transfer;
    })()`);
    await page.locator('#files').dispatchEvent('drop', { dataTransfer: dropped });
    await page.locator('#target option[value=webp]').waitFor({ state: 'attached' });
    await page.getByLabel('Convert to').selectOption('webp');
    const slider = page.getByRole('slider', { name: /Quality/ });
    await slider.fill('40');
    assert.equal(await page.textContent('#opt-quality-value'), '40', 'the slider shows its value');
    await shoot(page, 'convert');
    await page.getByRole('button', { name: 'Convert', exact: true }).click();
    const link = page.locator('#jobs li a', { hasText: 'Download' });
    await link.waitFor({ timeout: 30_000 });
    const [download] = await Promise.all([page.waitForEvent('download'), link.click()]);
    assert.equal(download.suggestedFilename(), 'dropped photo.webp');
    const meta = await sharp(await readFile((await download.path())!)).metadata();
    assert.deepEqual([meta.format, meta.width, meta.height], ['webp', 200, 150]);
    const id = (await page.getAttribute('#jobs li', 'id'))!.replace('job-', '');
    const made = await convdAdmin(daemon.dataDir, ['keys', 'create', '--account', alice.id, '--json']);
    const conversion = await call({ baseUrl: daemon.baseUrl, apiKey: (made.json as { key: string }).key }, `/conversions/${id}`);
    assert.equal(conversion.body.options.quality, 40, 'the slider\'s value reached the conversion');
    // Without the session's token in X-CSRF-Token (or from elsewhere), nothing is submitted.
    const forged = await page.evaluate(async () => (await fetch('/web/api/conversions', { method: 'POST', body: new FormData() })).status);
    assert.equal(forged, 403);
    await context.close();
  });

  it('the convert page merges files of different kinds into one PDF, in the order chosen, with page numbers', async () => {
    const { context, page } = await signedIn(browser, daemon.url, 'alice', { acceptDownloads: true });
    await page.goto(`${daemon.url}/convert`);
    const doc = await PDFDocument.create();
    const font = await doc.embedFont(StandardFonts.Helvetica);
    for (const n of [1, 2]) doc.addPage([300, 300]).drawText(`WEB-MERGE-${n}`, { x: 20, y: 250, size: 16, font });
    await page.setInputFiles('#files', [
      { name: 'first.pdf', mimeType: 'application/pdf', buffer: Buffer.from(await doc.save()) },
      { name: 'second.png', mimeType: 'image/png', buffer: await png(120, 80) },
      { name: 'third.txt', mimeType: 'text/plain', buffer: Buffer.from('WEB-MERGE-TEXT\n') },
    ]);
    await page.locator('#convert-problem', { hasText: 'merge them into one PDF' }).waitFor();
    await page.getByLabel('Merge the files into one PDF').check();
    await page.locator('#target option[value=pdf]').waitFor({ state: 'attached' });
    assert.deepEqual(await page.locator('#target option').allTextContents(), ['pdf'], 'a merge makes a PDF only');
    await page.locator('#opt-page_numbers').fill('{n} of {total}');
    // Every operation's field labelled, nothing wider than a phone's screen.
    await shoot(page, 'convert-merge');
    await page.getByRole('button', { name: 'Convert', exact: true }).click();
    const link = page.locator('#jobs li a', { hasText: 'Download' });
    await link.waitFor({ timeout: 30_000 });
    assert.match(await page.textContent('#jobs li .name') ?? '', /3 files merged/);
    const [download] = await Promise.all([page.waitForEvent('download'), link.click()]);
    assert.equal(download.suggestedFilename(), 'first.pdf');
    const path = (await download.path())!;
    const merged = await PDFDocument.load(await readFile(path));
    assert.equal(merged.getPageCount(), 4);
    const text = (await promisify(execFile)('pdftotext', [path, '-'])).stdout.split('\f');
    assert.match(text[0]!, /WEB-MERGE-1[\s\S]*1 of 4/);
    assert.match(text[1]!, /WEB-MERGE-2/);
    assert.match(text[3]!, /WEB-MERGE-TEXT[\s\S]*4 of 4/);
    await context.close();
  });

  it('the convert page takes an image for a watermark: chosen in its own field, drawn on every page', async () => {
    const { context, page } = await signedIn(browser, daemon.url, 'alice', { acceptDownloads: true });
    await page.goto(`${daemon.url}/convert`);
    const doc = await PDFDocument.create();
    const font = await doc.embedFont(StandardFonts.Helvetica);
    for (const n of [1, 2, 3]) doc.addPage([300, 300]).drawText(`WEB-SEAL-${n}`, { x: 20, y: 250, size: 16, font });
    await page.setInputFiles('#files', [{ name: 'letter.pdf', mimeType: 'application/pdf', buffer: Buffer.from(await doc.save()) }]);
    await page.locator('#target option[value=pdf]').waitFor({ state: 'attached' });
    await page.getByLabel('Convert to').selectOption('pdf');
    await page.setInputFiles('#opt-watermark_image', [{ name: 'seal.png', mimeType: 'image/png', buffer: await png(120, 80) }]);
    await page.locator('#opt-watermark_opacity').fill('0.9');
    await page.getByRole('button', { name: 'Convert', exact: true }).click();
    const link = page.locator('#jobs li a', { hasText: 'Download' });
    await link.waitFor({ timeout: 30_000 });
    assert.equal(await page.textContent('#jobs li .name'), 'letter.pdf', 'the image is not taken for a second input');
    const [download] = await Promise.all([page.waitForEvent('download'), link.click()]);
    assert.equal(download.suggestedFilename(), 'letter.pdf');
    const rows = (await promisify(execFile)('pdfimages', ['-list', (await download.path())!])).stdout.split('\n').slice(2)
      .map((line) => line.trim().split(/\s+/)).filter((row) => row[2] === 'image');
    assert.deepEqual(rows.map((row) => row[0]), ['1', '2', '3']);
    await context.close();
  });

  it('the convert page offers OCR for a scanned PDF: ocr ticked, German chosen, a searchable PDF downloaded', async () => {
    const { context, page } = await signedIn(browser, daemon.url, 'alice', { acceptDownloads: true });
    await page.goto(`${daemon.url}/convert`);
    const scan = await scannedPdf(await scannedLines(['Größere Übungen für Straßenbahnfahrer']));
    await page.setInputFiles('#files', [{ name: 'brief.pdf', mimeType: 'application/pdf', buffer: scan }]);
    await page.locator('#target option[value=pdf]').waitFor({ state: 'attached' });
    await page.getByLabel('Convert to').selectOption('pdf');
    await page.getByLabel(/Read the text of scanned pages by OCR/).check();
    await page.getByLabel(/Languages of the text/).fill('deu');
    // The OCR fields labelled, nothing wider than a phone's screen.
    await shoot(page, 'convert-ocr');
    await page.getByRole('button', { name: 'Convert', exact: true }).click();
    const link = page.locator('#jobs li a', { hasText: 'Download' });
    await link.waitFor({ timeout: 60_000 });
    const [download] = await Promise.all([page.waitForEvent('download'), link.click()]);
    const text = (await promisify(execFile)('pdftotext', [(await download.path())!, '-'])).stdout;
    assert.match(text, /Größere Übungen für Straßenbahnfahrer/);
    await context.close();
  });

  it('the owner page: accounts made with their link, plan and credits changed, maintenance, engines; no one else sees it', async () => {
    const link = await convdAdmin(daemon.dataDir, ['accounts', 'login-link', daemon.accountId, '--json']);
    const context = await browser.newContext();
    const page = await context.newPage();
    await setPassword(page, (link.json as { url: string }).url);
    await page.getByRole('link', { name: 'Owner' }).click();
    await page.waitForURL(/\/admin$/);
    assert.match(await page.textContent('#engines ~ div') ?? '', /image\s*yes/);
    await page.getByLabel('Name', { exact: true }).fill('erin');
    await page.locator('#new-plan').selectOption('pro');
    await page.getByRole('button', { name: 'Create account and sign-in link' }).click();
    const erinLink = (await page.textContent('#link-value'))!.trim();
    assert.match(erinLink, /\/link\/cwl_/);
    await shoot(page, 'owner');
    const erinRow = page.locator('tr', { hasText: 'erin' });
    const erinId = (await erinRow.locator('code').textContent())!.trim();
    await page.locator(`#credits-${erinId}`).fill('7');
    await page.getByRole('button', { name: 'Change account erin' }).click();
    assert.match(await page.locator('tr', { hasText: 'erin' }).textContent() ?? '', /pro\s*7/);
    // The link made on the page works for erin.
    const erins = await browser.newContext();
    await setPassword(await erins.newPage(), erinLink);
    await erins.close();
    // The switch: /v1 answers 503 while it is on.
    await page.getByRole('button', { name: 'Switch the API off' }).click();
    assert.equal((await fetch(`${daemon.url}/v1/account`, { headers: { authorization: `Bearer ${daemon.apiKey}` } })).status, 503);
    await page.getByRole('button', { name: 'Switch the API on' }).click();
    assert.equal((await fetch(`${daemon.url}/v1/account`, { headers: { authorization: `Bearer ${daemon.apiKey}` } })).status, 200);
    // A member: no link to it, the page and its forms do not exist.
    const member = await signedIn(browser, daemon.url, 'alice');
    assert.equal(await member.page.getByRole('link', { name: 'Owner' }).count(), 0);
    const forged = await postForm(daemon.url, '/admin/maintenance', member.session, { csrf: member.csrf, enabled: 'on', retry_after: '60' });
    assert.equal((await member.page.goto(`${daemon.url}/admin`))?.status(), 404);
    assert.equal(forged.status, 404);
    assert.equal((await fetch(`${daemon.url}/v1/account`, { headers: { authorization: `Bearer ${daemon.apiKey}` } })).status, 200, 'the switch stayed off');
    await member.context.close();
    await context.close();
  });

  it('every page carries the security headers; German for a German browser', async () => {
    // The owner (whose password the owner page's test set) sees every page there is.
    const { session } = await signedIn(browser, daemon.url, 'owner');
    const pages = [['/signin', null], ['/link/cwl_none', null], ['/', session], ['/account', session], ['/conversions', session], ['/convert', session], ['/admin', session]] as const;
    for (const [path, cookie] of pages) {
      const answer = await fetch(`${daemon.url}${path}`, { redirect: 'manual', headers: cookie ? { cookie: `convd_session=${cookie}` } : {} });
      assert.match(answer.headers.get('content-security-policy') ?? '', /default-src 'none'.*frame-ancestors 'none'/, path);
      assert.equal(answer.headers.get('x-content-type-options'), 'nosniff', path);
      assert.equal(answer.headers.get('referrer-policy'), 'same-origin', path);
      assert.equal(answer.headers.get('x-frame-options'), 'DENY', path);
    }
    const context = await browser.newContext({ locale: 'de-DE' });
    const page = await context.newPage();
    await page.goto(`${daemon.url}/signin`);
    assert.equal(await page.getAttribute('html', 'lang'), 'de');
    assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Anmelden');
    await shoot(page, 'signin-de');
    await page.getByRole('link', { name: 'English' }).click();
    assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Sign in');
    await context.close();
  });
});

describe('--no-web', () => {
  it('serves no page; /v1 is unchanged', async () => {
    const daemon = await startDaemon({ args: ['--no-web'] });
    try {
      assert.equal((await fetch(`${daemon.url}/signin`)).status, 404);
      assert.equal((await fetch(`${daemon.url}/v1/account`, { headers: { authorization: `Bearer ${daemon.apiKey}` } })).status, 200);
    } finally {
      await daemon.dispose();
    }
  });
});
