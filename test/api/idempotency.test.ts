/**
 * Idempotency-Key over real HTTP (docs/api.md): a repeated request returns the original
 * conversion and starts and charges nothing new, concurrent duplicates included (50 at once);
 * the same key with another request is 409 idempotency_conflict; keys are per account and at
 * most 64 characters; a replay is answered even when the account could not start anything new.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  assertError, assertFieldErrors, call, getAccount, InputServer, newAccount, png, spoolFiles, submitFile, submitJson,
  waitForEnd, type Client, type ListPage,
} from '../helpers/api-support.ts';
import { startDaemon, type DaemonHandle } from '../helpers/daemon.ts';

async function listAll(client: Client): Promise<ListPage['data']> {
  return (await call<ListPage>(client, '/conversions?limit=100')).body.data;
}

describe('Idempotency-Key over HTTP', () => {
  let daemon: DaemonHandle;
  const inputs = new InputServer();
  let image: Buffer;
  let lite: Client;
  let other: Client;
  let free: Client;
  let poor: Client;

  before(async () => {
    [daemon] = await Promise.all([startDaemon({ args: ['--allow-private-urls', '--workers', '4'] }), inputs.start()]);
    image = await png(32, 32);
    [lite, other, free, poor] = await Promise.all([
      newAccount(daemon, 'lite'),
      newAccount(daemon, 'lite'),
      newAccount(daemon, 'free'),
      newAccount(daemon, 'lite', { credits: 1 }),
    ]);
  });
  after(async () => {
    await inputs.stop();
    await daemon.dispose();
  });

  it('50 simultaneous identical multipart requests with one key create and charge one conversion', async () => {
    const key = 'upload-0001';
    const answers = await Promise.all(Array.from({ length: 50 }, () =>
      submitFile(lite, { target: 'webp', quality: '70' }, { data: image, name: 'same.png' }, { 'idempotency-key': key })));
    for (const got of answers) assert.ok(got.status === 202 || got.status === 200, `${got.status} ${JSON.stringify(got.body)}`);
    const ids = new Set(answers.map((a) => a.body.id));
    assert.equal(ids.size, 1, `ids: ${[...ids].join(', ')}`);
    const [id] = ids;

    const ended = await waitForEnd(lite, id!);
    assert.equal(ended.status, 'succeeded');
    assert.equal(ended.credits, 1);
    assert.deepEqual((await listAll(lite)).map((c) => c.id), [id]);
    assert.equal((await getAccount(lite)).body.credits.remaining, 999, 'charged once');
    assert.deepEqual(await spoolFiles(daemon.dataDir), [], 'the 49 duplicate uploads are not kept');

    // A later retry gets the finished conversion at once, still nothing new.
    const retry = await submitFile(lite, { target: 'webp', quality: '70', wait: '5' }, { data: image, name: 'same.png' }, { 'idempotency-key': key });
    assert.equal(retry.status, 200);
    assert.equal(retry.body.id, id);
    assert.equal(retry.body.status, 'succeeded');
    assert.equal((await listAll(lite)).length, 1);
    assert.equal((await getAccount(lite)).body.credits.remaining, 999);
  });

  it('the same request in another form (options flat or nested, defaults spelled out, another wait) is a replay', async () => {
    const url = inputs.serve('/same.png', image);
    const key = 'json-same';
    const first = await submitJson(lite, { target: 'png', url, options: { width: 16 }, wait: 20 }, { 'idempotency-key': key });
    assert.equal(first.status, 200);
    for (const body of [
      { target: 'png', url, width: 16 },
      { target: 'png', url, options: { width: '16', fit: 'inside', strip: true } },
      { target: 'PNG', url, options: { width: 16 }, wait: 3 },
    ]) {
      const again = await submitJson(lite, body, { 'idempotency-key': key });
      assert.equal(again.body.id, first.body.id, JSON.stringify(body));
    }
    assert.equal(inputs.requests.filter((p) => p === '/same.png').length, 1, 'the URL was fetched once');
  });

  it('the same key with a different request is 409 idempotency_conflict', async () => {
    const key = 'conflict-1';
    const first = await submitFile(lite, { target: 'webp', wait: '20' }, { data: image, name: 'a.png' }, { 'idempotency-key': key });
    assert.equal(first.status, 200);
    const otherImage = await png(32, 32, '#00ff00');
    const differences: [string, () => ReturnType<typeof submitFile>][] = [
      ['target', () => submitFile(lite, { target: 'jpg' }, { data: image, name: 'a.png' }, { 'idempotency-key': key })],
      ['options', () => submitFile(lite, { target: 'webp', quality: '10' }, { data: image, name: 'a.png' }, { 'idempotency-key': key })],
      ['file content', () => submitFile(lite, { target: 'webp' }, { data: otherImage, name: 'a.png' }, { 'idempotency-key': key })],
      ['file name', () => submitFile(lite, { target: 'webp' }, { data: image, name: 'b.png' }, { 'idempotency-key': key })],
      ['input kind', () => submitJson(lite, { target: 'webp', url: `${inputs.origin}/a.png` }, { 'idempotency-key': key })],
    ];
    for (const [what, send] of differences) {
      const error = assertError(await send(), 409, 'idempotency_conflict');
      assert.match(error.message, /Idempotency-Key/, what);
    }
    const german = assertError(await submitFile(lite, { target: 'jpg' }, { data: image, name: 'a.png' }, { 'idempotency-key': key, 'accept-language': 'de' }), 409, 'idempotency_conflict');
    assert.match(german.message, /bereits/);
    assert.deepEqual(await spoolFiles(daemon.dataDir), []);
    // The original is untouched.
    assert.equal((await call(lite, `/conversions/${first.body.id}`)).body.target, 'webp');
  });

  it('keys belong to one account: another account with the same key gets its own conversion', async () => {
    const key = 'shared-name';
    const mine = await submitFile(lite, { target: 'webp', wait: '20' }, { data: image, name: 'x.png' }, { 'idempotency-key': key });
    const theirs = await submitFile(other, { target: 'webp', wait: '20' }, { data: image, name: 'x.png' }, { 'idempotency-key': key });
    assert.equal(mine.status, 200);
    assert.equal(theirs.status, 200);
    assert.notEqual(mine.body.id, theirs.body.id);
    assert.equal((await getAccount(other)).body.credits.remaining, 999);
    // Nor does a different request under that key conflict across accounts.
    const different = await submitFile(other, { target: 'webp', wait: '20' }, { data: image, name: 'x.png' }, { 'idempotency-key': 'only-mine' });
    assert.equal(different.status, 200);
  });

  it('a key of at most 64 characters is accepted; a longer one is 422', async () => {
    const ok = await submitFile(lite, { target: 'webp' }, { data: image, name: 'k.png' }, { 'idempotency-key': 'k'.repeat(64) });
    assert.equal(ok.status, 202, JSON.stringify(ok.body));
    const problems = assertFieldErrors(await submitFile(lite, { target: 'webp' }, { data: image, name: 'k.png' }, { 'idempotency-key': 'k'.repeat(65) }), ['Idempotency-Key']);
    assert.equal(problems['Idempotency-Key']!.reason, 'too_long');
    assert.match(problems['Idempotency-Key']!.message, /64/);
    assert.deepEqual(await spoolFiles(daemon.dataDir), []);
    await waitForEnd(lite, ok.body.id);
  });

  it('a replay is answered even when the account is at its concurrency limit or out of credits', async () => {
    const url = inputs.serve('/held.png', image, { hold: true });
    try {
      const a = await submitJson(free, { target: 'webp', url }, { 'idempotency-key': 'held-a' });
      const b = await submitJson(free, { target: 'webp', url }, { 'idempotency-key': 'held-b' });
      assert.equal(a.status, 202);
      assert.equal(b.status, 202);
      assertError(await submitJson(free, { target: 'webp', url }), 429, 'concurrency_limit');
      const replay = await submitJson(free, { target: 'webp', url }, { 'idempotency-key': 'held-a' });
      assert.equal(replay.status, 202);
      assert.equal(replay.body.id, a.body.id);
      assert.equal(replay.headers.get('location'), a.body.links.self);
    } finally {
      inputs.release('/held.png');
    }

    const spent = await submitFile(poor, { target: 'webp', wait: '20' }, { data: image, name: 'p.png' }, { 'idempotency-key': 'last-credit' });
    assert.equal(spent.status, 200);
    assert.equal(spent.body.credits, 1);
    assert.equal((await getAccount(poor)).body.credits.remaining, 0);
    assertError(await submitFile(poor, { target: 'webp' }, { data: image, name: 'q.png' }), 402, 'insufficient_credits');
    const replay = await submitFile(poor, { target: 'webp', wait: '20' }, { data: image, name: 'p.png' }, { 'idempotency-key': 'last-credit' });
    assert.equal(replay.status, 200);
    assert.equal(replay.body.id, spent.body.id);
  });
});
