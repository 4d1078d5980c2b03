import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { cleanEnv, runConv, spawnConv, tempDir } from '../helpers/cli-helpers.ts';

/**
 * `conv webhook verify` against signatures computed here from the spec's rule (HMAC-SHA256 of
 * "<t>.<raw body>", hex), not with the project's own signing code.
 */

const SECRET = 'whsec_test_secret';
const BODY = Buffer.from('{"event":"conversion.succeeded","data":{"id":"cnv_1","note":"caf\u00e9"}}');

function sign(body: Buffer, t: number, secret = SECRET): string {
  return `t=${t},v1=${createHmac('sha256', secret).update(`${t}.`).update(body).digest('hex')}`;
}

let dir: { path: string; remove: () => Promise<void> };
let bodyFile: string;
const now = () => Math.floor(Date.now() / 1000);
const env = () => cleanEnv({ HOME: dir.path, XDG_CONFIG_HOME: dir.path });

before(async () => {
  dir = await tempDir('conv-webhook-');
  bodyFile = join(dir.path, 'body.json');
  await writeFile(bodyFile, BODY);
});
after(() => dir.remove());

const verify = (args: string[], stdin?: Buffer) => runConv(['webhook', 'verify', ...args], { env: env(), stdin });

describe('conv webhook verify', () => {
  it('accepts an authentic, fresh delivery (exit 0) from a file or stdin', async () => {
    const signature = sign(BODY, now());
    const fromFile = await verify(['--secret', SECRET, '--signature', signature, bodyFile]);
    assert.equal(fromFile.code, 0, fromFile.stderr);
    assert.match(fromFile.stdout, /^valid: signed at \d{4}-/);
    const fromStdin = await verify(['--secret', SECRET, '--signature', signature, '--json'], BODY);
    assert.equal(fromStdin.code, 0, fromStdin.stderr);
    const verdict = JSON.parse(fromStdin.stdout) as { valid: boolean; timestamp: number };
    assert.equal(verdict.valid, true);
    assert.ok(Math.abs(verdict.timestamp - now()) < 5);
  });

  it('takes the secret from CONV_WEBHOOK_SECRET', async () => {
    const result = await runConv(['webhook', 'verify', '--signature', sign(BODY, now()), bodyFile], { env: { ...env(), CONV_WEBHOOK_SECRET: SECRET } });
    assert.equal(result.code, 0, result.stderr);
  });

  const rejections: [string, () => string[], Buffer, string][] = [
    ['a body changed by one byte', () => ['--signature', sign(BODY, now())], Buffer.concat([BODY, Buffer.from(' ')]), 'bad_signature'],
    ['another secret', () => ['--signature', sign(BODY, now(), 'whsec_other')], BODY, 'bad_signature'],
    ['a timestamp 300 s old', () => ['--signature', sign(BODY, now() - 300)], BODY, 'stale_timestamp'],
    ['a timestamp far in the future', () => ['--signature', sign(BODY, now() + 900)], BODY, 'future_timestamp'],
    ['a header without v1', () => ['--signature', `t=${now()}`], BODY, 'malformed_header'],
    ['a header that is not key=value', () => ['--signature', 'garbage'], BODY, 'malformed_header'],
  ];
  for (const [what, args, body, reason] of rejections) {
    it(`rejects ${what} with ${reason} (exit 1)`, async () => {
      const result = await verify(['--secret', SECRET, ...args()], body);
      assert.equal(result.code, 1);
      assert.match(result.stderr, new RegExp(`^error: ${reason}: `));
      assert.equal(result.stdout, '');
      const json = await verify(['--secret', SECRET, ...args(), '--json'], body);
      assert.equal(json.code, 1);
      assert.deepEqual(JSON.parse(json.stdout), { valid: false, reason });
    });
  }

  it('--tolerance widens the accepted age', async () => {
    const old = sign(BODY, now() - 600);
    assert.equal((await verify(['--secret', SECRET, '--signature', old, bodyFile])).code, 1);
    assert.equal((await verify(['--secret', SECRET, '--signature', old, '--tolerance', '900', bodyFile])).code, 0);
  });

  it('needs a secret and a signature (exit 2)', async () => {
    const noSecret = await verify(['--signature', sign(BODY, now()), bodyFile]);
    assert.equal(noSecret.code, 2);
    assert.match(noSecret.stderr, /^error: usage: a webhook secret is needed/);
    const noSignature = await verify(['--secret', SECRET, bodyFile]);
    assert.equal(noSignature.code, 2);
    assert.match(noSignature.stderr, /required option '--signature <header>'/);
  });

  it('works as a real process reading the body on stdin', async () => {
    const ok = await spawnConv(['webhook', 'verify', '--secret', SECRET, '--signature', sign(BODY, now()), '-'], { env: env(), stdin: BODY });
    assert.equal(ok.code, 0, ok.stderr);
    const bad = await spawnConv(['webhook', 'verify', '--secret', SECRET, '--signature', sign(BODY, now()), '-'], { env: env(), stdin: Buffer.from('{}') });
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /^error: bad_signature: /);
  });
});
