/**
 * The web face over plain HTTP, without a browser: the style sheet and the script are served byte
 * for byte from their files (daemon/web/assets/) under names holding their content hash, with the
 * headers of an asset cached for good, and the pages' Content-Security-Policy allows exactly
 * what it did; the cookies carry their attributes (the session's HttpOnly, SameSite=Strict, its
 * Max-Age, Path the pages' path, Secure when the public address is https; the chosen language's
 * on a page that answers 404 too).
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { SESSION_LIFETIME_MS } from '../src/sign-in/web-sign-in.ts';
import { convdAdmin, ROOT, startDaemon, type DaemonHandle } from './helpers/daemon.ts';

const PASSWORD = 'correct horse battery';
const CSP = "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/** A cookie's name=value, then its attributes as written (order aside). */
function cookieParts(header: string): { pair: string; attributes: string[] } {
  const [pair, ...attributes] = header.split(';').map((part) => part.trim());
  return { pair: pair!, attributes: attributes.sort() };
}

function setCookies(answer: Response): string[] {
  return answer.headers.getSetCookie();
}

/** An account whose one-time link is used to set its password: the answer opens a session. */
async function passwordSet(daemon: DaemonHandle, name: string): Promise<Response> {
  const made = await convdAdmin(daemon.dataDir, ['accounts', 'create', '--plan', 'lite', '--name', name, '--login-link', '--json']);
  assert.equal(made.code, 0, made.stderr);
  const token = /\/link\/(cwl_[A-Za-z0-9_-]+)$/.exec((made.json as { login_link: { url: string } }).login_link.url)![1]!;
  return fetch(`${daemon.url}/link/${token}`, {
    method: 'POST', redirect: 'manual',
    headers: { origin: daemon.url, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ password: PASSWORD, repeated: PASSWORD }),
  });
}

function sessionOf(answer: Response): string {
  const cookie = setCookies(answer).find((c) => c.startsWith('convd_session='));
  assert.ok(cookie, 'a session cookie');
  return cookieParts(cookie).pair.slice('convd_session='.length);
}

async function signOut(daemon: DaemonHandle, session: string): Promise<Response> {
  const account = await fetch(`${daemon.url}/account`, { headers: { cookie: `convd_session=${session}` } });
  assert.equal(account.status, 200);
  const csrf = /name="csrf" value="([^"]+)"/.exec(await account.text())![1]!;
  return fetch(`${daemon.url}/signout`, {
    method: 'POST', redirect: 'manual',
    headers: { cookie: `convd_session=${session}`, origin: daemon.url, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ csrf }),
  });
}

for (const { title, args, base, secure } of [
  { title: 'at the host\'s root, over http', args: [], base: '', secure: false },
  { title: 'under a path, public address https', args: ['--public-url', 'https://convert.example.com/convd'], base: '/convd', secure: true },
]) {
  describe(`the web face over HTTP, ${title}`, () => {
    let daemon: DaemonHandle;
    before(async () => {
      daemon = await startDaemon({ args });
    });
    after(async () => {
      await daemon?.dispose();
    });

    it('serves the style sheet and the script as their files are, under their content hash', async () => {
      const page = await fetch(`${daemon.url}/signin`);
      assert.equal(page.status, 200);
      assert.equal(page.headers.get('content-security-policy'), CSP, 'nothing but this server\'s own files, no inline code');
      const html = await page.text();
      const linked = {
        style: /<link rel="stylesheet" href="([^"]+)">/.exec(html)?.[1],
        script: /<script src="([^"]+)" defer><\/script>/.exec(html)?.[1],
      };
      const files = { style: ['style.css', 'style', 'css', 'text/css; charset=utf-8'], script: ['app.js', 'app', 'js', 'text/javascript; charset=utf-8'] } as const;
      for (const kind of ['style', 'script'] as const) {
        const [file, name, extension, type] = files[kind];
        const bytes = await readFile(join(ROOT, 'daemon', 'web', 'assets', file));
        const hash = createHash('sha256').update(bytes).digest('hex').slice(0, 16);
        assert.equal(linked[kind], `${base}/web/assets/${name}.${hash}.${extension}`, kind);
        // The proxy in front takes the pages' path off before the daemon sees it.
        const answer = await fetch(`${daemon.url}/web/assets/${name}.${hash}.${extension}`);
        assert.equal(answer.status, 200, kind);
        assert.deepEqual(Buffer.from(await answer.arrayBuffer()), bytes, `${kind}: the file's bytes`);
        assert.equal(answer.headers.get('content-type'), type, kind);
        assert.equal(answer.headers.get('cache-control'), 'public, max-age=31536000, immutable', kind);
        assert.equal(answer.headers.get('x-content-type-options'), 'nosniff', kind);
      }
      assert.equal((await fetch(`${daemon.url}/web/assets/style.0000000000000000.css`)).status, 404, 'only the current name');
    });

    it('opens a session with a cookie for the pages\' path only, and drops it at sign-out', async () => {
      const path = base === '' ? '/' : base;
      const opened = await passwordSet(daemon, `owner-${secure ? 'tls' : 'plain'}`);
      assert.equal(opened.status, 303);
      assert.equal(opened.headers.get('location'), `${base}/account`);
      assert.equal(setCookies(opened).length, 1);
      const session = sessionOf(opened);
      assert.match(session, /^cws_[A-Za-z0-9_-]+$/);
      const expected = [`Path=${path}`, 'HttpOnly', 'SameSite=Strict', ...(secure ? ['Secure'] : [])];
      assert.deepEqual(cookieParts(setCookies(opened)[0]!).attributes, [...expected, `Max-Age=${SESSION_LIFETIME_MS / 1000}`].sort());

      const signedIn = await fetch(`${daemon.url}/signin`, {
        method: 'POST', redirect: 'manual',
        headers: { origin: daemon.url, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ name: `owner-${secure ? 'tls' : 'plain'}`, password: PASSWORD }),
      });
      assert.equal(signedIn.status, 303);
      assert.deepEqual(cookieParts(setCookies(signedIn)[0]!).attributes, [...expected, `Max-Age=${SESSION_LIFETIME_MS / 1000}`].sort());

      const out = await signOut(daemon, sessionOf(signedIn));
      assert.equal(out.status, 303);
      assert.equal(out.headers.get('location'), `${base}/signin`);
      assert.equal(setCookies(out).length, 1);
      const dropped = cookieParts(setCookies(out)[0]!);
      assert.equal(dropped.pair, 'convd_session=');
      assert.deepEqual(dropped.attributes, [...expected, 'Max-Age=0'].sort());
    });

    it('keeps a chosen language for a year, on a page that answers 404 too', async () => {
      const path = base === '' ? '/' : base;
      for (const [where, status] of [['/signin?lang=de', 200], ['/link/cwl_none?lang=de', 404]] as const) {
        const answer = await fetch(`${daemon.url}${where}`, { redirect: 'manual' });
        assert.equal(answer.status, status, where);
        assert.equal(answer.headers.get('content-language'), 'de', where);
        assert.deepEqual(setCookies(answer).map(cookieParts), [{ pair: 'convd_lang=de', attributes: [`Path=${path}`, 'SameSite=Lax', 'Max-Age=31536000'].sort() }], where);
      }
      const kept = await fetch(`${daemon.url}/signin`, { headers: { cookie: 'convd_lang=de', 'accept-language': 'en' } });
      assert.equal(kept.headers.get('content-language'), 'de', 'the cookie over the browser\'s language');
      assert.deepEqual(setCookies(kept), [], 'set once, when chosen');
    });
  });
}
