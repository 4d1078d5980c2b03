/**
 * Stopping the real daemon the way systemd does (SIGTERM) while conversions run: it stops
 * accepting at once, requests in flight get their answer, running conversions finish within
 * the drain timeout or go back to the queue, and after a restart every conversion ends; a
 * second signal exits at once. Then the orphan sweep at start.
 */
import assert from 'node:assert/strict';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { call, pngUpload, slowPng, smallPng, startConvd, tempDir, waitUntil, type Answer, type Convd } from '../helpers/ops-support.ts';

const dirs: string[] = [];
const daemons: Convd[] = [];
after(async () => {
  for (const daemon of daemons) await daemon.dispose();
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function fresh(args: string[]): Promise<Convd> {
  const dataDir = await tempDir();
  dirs.push(dataDir);
  const daemon = await startConvd({ dataDir, args });
  daemons.push(daemon);
  return daemon;
}

async function restart(previous: Convd, args: string[] = []): Promise<Convd> {
  const daemon = await startConvd({ dataDir: previous.dataDir, apiKey: previous.apiKey, accountId: previous.accountId, args });
  daemons.push(daemon);
  return daemon;
}

async function submit(daemon: Convd, image: Buffer, name: string): Promise<string> {
  const answer = await call(daemon, '/v1/conversions', { method: 'POST', body: pngUpload(image, name) });
  assert.equal(answer.status, 202, JSON.stringify(answer.body));
  return answer.body.id as string;
}

async function statusOf(daemon: Convd, id: string): Promise<string> {
  return (await call(daemon, `/v1/conversions/${id}`)).body.status as string;
}

/** Every conversion of the account, whatever the page size. */
async function allConversions(daemon: Convd): Promise<{ id: string; status: string }[]> {
  return (await call(daemon, '/v1/conversions?limit=100')).body.data as { id: string; status: string }[];
}

async function refused(url: string): Promise<boolean> {
  try {
    await fetch(`${url}/healthz`);
    return false;
  } catch (error) {
    return ((error as { cause?: { code?: string } }).cause?.code ?? '') === 'ECONNREFUSED';
  }
}

describe('SIGTERM with conversions running', () => {
  it('lets the running conversion finish within the drain timeout; the queued ones run after the restart', async () => {
    const daemon = await fresh(['--workers', '1', '--drain-timeout', '30s']);
    const slow = await submit(daemon, await slowPng(2000), 'slow.png');
    const small = await smallPng();
    const queued = [await submit(daemon, small, 'a.png'), await submit(daemon, small, 'b.png')];
    await waitUntil('the slow one to run', async () => ((await statusOf(daemon, slow)) === 'processing' ? true : undefined));
    // A request in flight when the signal comes: it gets its answer, not a reset.
    const waiting: Promise<Answer> = call(daemon, `/v1/conversions/${slow}?wait=25`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    daemon.signal('SIGTERM');
    await waitUntil('new connections to be refused', async () => ((await refused(daemon.url)) ? true : undefined), 2000);
    const answer = await waiting;
    assert.equal(answer.status, 200);
    assert.equal(answer.body.status, 'succeeded', 'it finished during the drain');
    assert.equal(answer.headers.get('connection'), 'close');
    assert.equal(await daemon.exited, 0);
    const logs = daemon.logs();
    assert.deepEqual(
      (({ running, queued: q }) => ({ running, queued: q }))(logs.find((l) => l.event === 'shutdown') as unknown as { running: number; queued: number }),
      { running: 1, queued: 2 },
    );
    const stopped = logs.find((l) => l.event === 'stopped')!;
    assert.deepEqual([stopped.finished, stopped.requeued], [1, 0]);
    assert.ok(!logs.some((l) => l.event === 'conversion' && queued.includes(l.id as string) && l.to === 'processing'), 'queued work was not started while draining');

    const again = await restart(daemon);
    for (const id of queued) {
      const done = await call(again, `/v1/conversions/${id}?wait=25`);
      assert.equal(done.body.status, 'succeeded', id);
    }
    assert.equal((await call(again, `/v1/conversions/${slow}/download`)).status, 200);
    await again.stop();
  });

  it('re-queues the conversion still running when the drain timeout passes; after the restart none is lost', async () => {
    const daemon = await fresh(['--workers', '1', '--drain-timeout', '100ms']);
    // Large enough to be still running after the pause below, on a loaded machine too.
    const slow = await submit(daemon, await slowPng(2800), 'slow.png');
    const small = await smallPng();
    const queued = [await submit(daemon, small, 'a.png'), await submit(daemon, small, 'b.png')];
    await waitUntil('the slow one to run', async () => ((await statusOf(daemon, slow)) === 'processing' ? true : undefined));
    // Waiting for a conversion that will not run before the exit: answered with its state.
    const waiting = call(daemon, `/v1/conversions/${queued[0]}?wait=25`);
    // Long enough for the request to reach the daemon on a loaded machine (50 ms was not, once;
    // 300 ms was not, once, during a full run beside the PostgreSQL suites).
    await new Promise((resolve) => setTimeout(resolve, 1000));
    assert.equal(await statusOf(daemon, slow), 'processing', 'still running when the signal comes');
    const signalled = Date.now();
    daemon.signal('SIGTERM');
    const answer = await waiting;
    assert.equal(answer.status, 200);
    assert.equal(answer.body.status, 'queued');
    assert.equal(await daemon.exited, 0);
    assert.ok(Date.now() - signalled < 5000, `stopped in ${Date.now() - signalled} ms`);
    const logs = daemon.logs();
    const stopped = logs.find((l) => l.event === 'stopped')!;
    assert.deepEqual([stopped.finished, stopped.requeued], [0, 1]);
    assert.ok(logs.some((l) => l.event === 'conversion' && l.id === slow && l.from === 'processing' && l.to === 'queued'), 'the state change back to queued is logged');

    const again = await restart(daemon);
    for (const id of [slow, ...queued]) {
      const done = await call(again, `/v1/conversions/${id}?wait=25`);
      assert.equal(done.body.status, 'succeeded', id);
    }
    const all = await allConversions(again);
    assert.deepEqual(all.map((c) => c.id).sort(), [slow, ...queued].sort(), 'exactly the three submitted: none lost, none doubled');
    await again.stop();
  });

  it('ends at once on a second signal; the interrupted conversion runs after the restart', async () => {
    const daemon = await fresh(['--workers', '1', '--drain-timeout', '60s']);
    // Large enough to be still running after both signals even on a loaded machine (seconds).
    const slow = await submit(daemon, await slowPng(3000), 'slow.png');
    await waitUntil('the slow one to run', async () => ((await statusOf(daemon, slow)) === 'processing' ? true : undefined));
    daemon.signal('SIGTERM');
    await waitUntil('the shutdown line', () => daemon.logs().find((l) => l.event === 'shutdown'));
    const second = Date.now();
    daemon.signal('SIGTERM');
    // "At once": no drain (60 s here), no wait for the libvips operation in progress either.
    assert.equal(await daemon.exited, null, daemon.stderr());
    assert.equal(daemon.process.signalCode, 'SIGKILL');
    assert.ok(Date.now() - second < 1000, `exited ${Date.now() - second} ms after the second signal`);
    assert.ok(daemon.logs().some((l) => l.event === 'shutdown.forced'));
    assert.ok(!daemon.logs().some((l) => l.event === 'stopped'));

    const again = await restart(daemon);
    // A large image runs in an engine host below every fresh conversion (niceness 19 after 2 s):
    // on a busy box it takes longer than one wait.
    let done = await call(again, `/v1/conversions/${slow}?wait=25`);
    for (let turn = 0; turn < 4 && done.body.status === 'processing'; turn++) done = await call(again, `/v1/conversions/${slow}?wait=25`);
    assert.equal(done.body.status, 'succeeded');
    await again.stop();
  });
});

describe('orphan sweep at start', () => {
  it('deletes files no conversion owns (crash leftovers) and keeps the rest', async () => {
    const daemon = await fresh([]);
    const kept = await call(daemon, '/v1/conversions', { method: 'POST', body: pngUpload(await smallPng(), 'kept.png', { target: 'webp', wait: '20' }) });
    assert.equal(kept.body.status, 'succeeded');
    const keptBytes = Buffer.from(await (await fetch(`${daemon.url}/v1/conversions/${kept.body.id}/download`, { headers: { authorization: `Bearer ${daemon.apiKey}` } })).arrayBuffer());
    assert.equal(await daemon.stop(), 0);

    // What a crash between two steps leaves: an input and a result of no conversion, a half
    // spooled upload, an engine's scratch directory.
    const blobs = join(daemon.dataDir, 'blobs');
    await writeFile(join(blobs, 'inputs', 'cnv_01m8zzzzzzzzzzzzzzzzzzzzzz'), 'orphan input');
    await writeFile(join(blobs, 'results', 'cnv_01m8yyyyyyyyyyyyyyyyyyyyyy'), 'orphan result');
    await writeFile(join(blobs, 'spool', '3b1f0c2e-upload'), 'half an upload');
    await mkdir(join(blobs, 'work', 'cnv_01m8xxxxxxxxxxxxxxxxxxxxxx-1a2b3c4d'));
    await writeFile(join(blobs, 'work', 'cnv_01m8xxxxxxxxxxxxxxxxxxxxxx-1a2b3c4d', 'output.webp'), 'scratch');

    const again = await restart(daemon);
    assert.deepEqual(await readdir(join(blobs, 'inputs')), []);
    assert.deepEqual(await readdir(join(blobs, 'results')), [kept.body.id]);
    assert.deepEqual(await readdir(join(blobs, 'spool')), []);
    assert.deepEqual(await readdir(join(blobs, 'work')), []);
    const sweep = again.logs().find((l) => l.event === 'sweep.orphans');
    assert.deepEqual([sweep?.inputs, sweep?.results], [1, 1]);
    const download = await fetch(`${again.url}/v1/conversions/${kept.body.id}/download`, { headers: { authorization: `Bearer ${again.apiKey}` } });
    assert.equal(download.status, 200);
    assert.deepEqual(Buffer.from(await download.arrayBuffer()), keptBytes);
    await again.stop();
  });
});
