/**
 * A tenant with a free-plan key attacks the daemon with ordinary uploads (the findings of the
 * issue "No account can take the daemon down"). For every attack, through a real daemon: another
 * account's GET /healthz and GET /v1/account keep answering (p99 under 100 ms while the attack
 * runs) and its png -> webp succeeds; the daemon process never exits; the attacker's conversion
 * ends with a clear code and, when it fails, costs nothing; no scratch file is left.
 *
 * @alone: it measures another account's latency under the attack's load, not another suite's.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, statfs, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import type { PublicConversion } from '../../src/model/conversion.ts';
import { newAccount } from '../helpers/api-support.ts';
import { startDaemon, type DaemonHandle } from '../helpers/daemon.ts';
import { BOUNDARY, multipartHead, RawRequest } from '../helpers/raw-upload.ts';
import { smallDisk } from '../helpers/small-disk.ts';
import { assertAlive, scratchFiles, victimConverts, watchVictim } from '../helpers/victim.ts';
import { meteredClient, remainingCredits, uploadFile, waitForEnd, type Client } from '../helpers/registry-pairs-daemon.ts';
import { rawStatus, waitUntil } from '../helpers/ops-support.ts';

const P99_LIMIT_MS = 100;

let dir: string;
let daemon: DaemonHandle;
let limited: DaemonHandle;
let attacker: Client;
let limitedAttacker: Client;
let victimPng: Buffer;
const files: Record<string, string> = {};

/** Writes a file of `bytes` made by repeating what `line(i)` gives, without holding it whole. */
async function writeLines(name: string, line: (index: number) => string, count: number, head = ''): Promise<string> {
  const path = join(dir, name);
  const chunks: string[] = [head];
  for (let i = 0; i < count; i++) chunks.push(line(i));
  await writeFile(path, chunks.join(''));
  return path;
}

/** One anchored list of about `bytes`, then that list named by 98 aliases. */
function aliasBomb(name: string, bytes: number): Promise<string> {
  const item = '  - xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n';
  const items = Math.ceil(bytes / item.length);
  const aliases = Array.from({ length: 98 }, (_, i) => `copy${i}: *list\n`).join('');
  return writeLines(name, () => item, items, 'list: &list\n').then(async (path) => {
    await writeFile(path, aliases, { flag: 'a' });
    return path;
  });
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'convd-attack-'));
  [daemon, limited] = await Promise.all([
    // Two workers whatever the machine: a tenant's share is all workers but one.
    startDaemon({ args: ['--workers', '2'] }),
    // Tight engine limits, to show that they stop the work they limit.
    startDaemon({ env: { CONVD_ENGINE_TIMEOUT_MS_DATA: '400', CONVD_ENGINE_MEMORY_MB: '400', CONVD_INPUT_CAP_MB_YAML: '64' } }),
  ]);
  [attacker, limitedAttacker] = await Promise.all([meteredClient(daemon, 'free'), meteredClient(limited, 'free')]);
  victimPng = await sharp({ create: { width: 600, height: 400, channels: 3, background: '#3366aa' } }).png().toBuffer();
  files.emphasis = await writeLines('emphasis.md', () => '*a', 350_000);
  files.nested = await writeLines('nested.md', (i) => (i === 100_000 ? 'a' : '*'), 200_001);
  files.yaml25 = await writeLines('records-25mb.yaml', (i) => `- {id: ${i}, name: n${i}, v: [1,2,3]}\n`, 600_000);
  files.yaml18 = await writeLines('records-18mb.yaml', (i) => `- id: ${i}\n  name: name-${i}\n`, 720_000);
  files.bomb10 = await aliasBomb('bomb-10mb.yaml', 10 * 1024 * 1024);
  files.bomb3 = await aliasBomb('bomb-3mb.yaml', 3 * 1024 * 1024);
  const header = Array.from({ length: 1_000_000 }, (_, i) => `c${i}`).join(',');
  files.columns = join(dir, 'wide.csv');
  await writeFile(files.columns, `${header}\n${'1,'.repeat(999_999)}1\n`);
  files.png8000 = join(dir, 'huge.png');
  await sharp({ create: { width: 8000, height: 8000, channels: 3, background: '#808080' } }).png().toFile(files.png8000);
});

after(async () => {
  await Promise.all([daemon?.dispose(), limited?.dispose()]);
  if (dir) await rm(dir, { recursive: true, force: true });
});

/**
 * Runs `work` (an attack) while the victim, the daemon's own unmetered account, probes it from
 * another process and converts a PNG to WebP; then checks what the victim got and that the daemon
 * is the same process, still running.
 */
async function underAttack<T>(d: DaemonHandle, work: () => Promise<T>): Promise<T> {
  const watch = watchVictim(d, d.apiKey);
  await watch.ready;
  let result: T;
  try {
    const victim = victimConverts(d, d.apiKey, victimPng);
    result = await work();
    await victim;
  } finally {
    const report = await watch.stop();
    console.log(`victim: ${report.answered} answers, p99 ${report.p99Ms.toFixed(1)} ms, max ${report.maxMs.toFixed(1)} ms`);
    assert.equal(report.failed, 0, 'every probe of the victim was answered 200');
    assert.ok(report.p99Ms < P99_LIMIT_MS, `victim p99 ${report.p99Ms.toFixed(1)} ms (max ${report.maxMs.toFixed(1)} ms, ${report.answered} answers)`);
  }
  await assertAlive(d);
  return result;
}

/**
 * One conversion as an attack: the attacker uploads `path` for `target`; returns its conversion
 * at its end, checked to cost nothing when it failed and to leave no scratch file.
 */
async function attack(d: DaemonHandle, client: Client, path: string, name: string, target: string): Promise<PublicConversion> {
  const before = await remainingCredits(client);
  const done = await underAttack(d, async () => {
    const created = await uploadFile(client, { target, wait: '30' }, path, name);
    assert.ok(created.status === 200 || created.status === 202, `${created.status} ${JSON.stringify(created.body)}`);
    return created.status === 200 ? created.body : waitForEnd(client, created.body.id, 180_000);
  });
  if (done.status === 'failed') {
    assert.equal(done.credits, 0);
    assert.equal(await remainingCredits(client), before, 'a failed attack costs nothing');
  }
  await waitUntil('no scratch file left', async () => ((await scratchFiles(d)).length === 0 ? true : undefined), 5000);
  return done;
}

function assertFailed(done: PublicConversion, code: string, message: RegExp): void {
  assert.equal(done.status, 'failed', JSON.stringify(done));
  assert.equal(done.error?.code, code, done.error?.message);
  assert.match(done.error!.message, message);
}

describe('hostile tenant: engines that cannot block or crash the daemon', () => {
  it("700 KB of '*a' Markdown -> html (148 s of a frozen daemon before): converted in the engine host", async () => {
    const done = await attack(daemon, attacker, files.emphasis!, 'emphasis.md', 'html');
    assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
    assert.equal(done.credits, 1);
  });

  it("'*' x 100,000 + 'a' + '*' x 100,000 -> html (a stack overflow before): converted", async () => {
    const done = await attack(daemon, attacker, files.nested!, 'nested.md', 'html');
    assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
  });

  it('the Markdown past a 400 ms data time limit ends timeout: the limit stops the work (the host is killed)', async () => {
    // The limit runs from the moment the engine host has the work, not while it starts.
    const done = await attack(limited, limitedAttacker, files.emphasis!, 'emphasis.md', 'html');
    assertFailed(done, 'timeout', /limit/);
    assert.match(limited.stderr(), /"event":"engine_host.ended".*"signal":"SIGKILL"/, 'its host process was killed');
  });

  it('25 MB YAML -> json (a crash loop before): file_too_large at the YAML cap, with the limit in the message', async () => {
    const done = await attack(daemon, attacker, files.yaml25!, 'records.yaml', 'json');
    assertFailed(done, 'file_too_large', /at most 4 MB \(setting input_cap_mb\.yaml\)/);
  });

  it('the same 25 MB YAML with the cap raised to 64 MB: ends in the engine host, the daemon lives', async () => {
    const done = await attack(limited, limitedAttacker, files.yaml25!, 'records.yaml', 'json');
    assert.equal(done.status, 'failed');
    assert.ok(['timeout', 'memory_limit'].includes(done.error!.code), JSON.stringify(done.error));
    assert.doesNotMatch(limited.stderr(), /conversion\.requeued/, 'nothing was interrupted');
  });

  it('18 MB YAML -> json (57 s of a frozen daemon before): file_too_large', async () => {
    assertFailed(await attack(daemon, attacker, files.yaml18!, 'big.yaml', 'json'), 'file_too_large', /4 MB/);
  });

  it('a 10 MB YAML with one list aliased 98 times (a 1 GB result before): file_too_large', async () => {
    assertFailed(await attack(daemon, attacker, files.bomb10!, 'bomb.yaml', 'json'), 'file_too_large', /YAML/);
  });

  it('a 3 MB alias bomb under the cap: refused by the alias expansion limit', async () => {
    assertFailed(await attack(daemon, attacker, files.bomb3!, 'bomb.yaml', 'json'), 'input_invalid', /aliases would expand it past/);
  });

  it('a CSV with 1,000,000 columns -> json: input_invalid', async () => {
    assertFailed(await attack(daemon, attacker, files.columns!, 'wide.csv', 'json'), 'input_invalid', /1000000 columns at line 1; at most 16384/);
  });

  it('an 8000x8000 PNG -> pdf (4.5 s of a frozen daemon before) past a 400 MB engine memory limit: memory_limit', async () => {
    assertFailed(await attack(limited, limitedAttacker, files.png8000!, 'huge.png', 'pdf'), 'memory_limit', /400 MB/);
  });

  it('the same PNG with the default limit converts, and the daemon answered meanwhile', async () => {
    const done = await attack(daemon, attacker, files.png8000!, 'huge.png', 'pdf');
    assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
    const { PDFDocument } = await import('pdf-lib');
    const response = await fetch(`${attacker.baseUrl}/conversions/${done.id}/download`, { headers: { authorization: `Bearer ${attacker.apiKey}` } });
    const pdf = await PDFDocument.load(new Uint8Array(await response.arrayBuffer()));
    assert.deepEqual(pdf.getPages().map((page) => [Math.round(page.getWidth()), Math.round(page.getHeight())]), [[8000, 8000]]);
  });
});


describe('hostile tenant: long conversions', () => {
  it("a tenant's long conversions leave a worker for the others", async () => {
    // Two conversions of many seconds each (a 2,000,000-row CSV to JSON): the plan's two at once.
    const rows = join(dir, 'rows.csv');
    await writeLines('rows.csv', (i) => (i === 0 ? 'id,name,value\n' : `${i},name ${i},${i * 7}\n`), 1_500_000);
    // A pro tenant: metered like a free one, with the requests per minute to be watched closely.
    const tenant = await newAccount(daemon, 'pro');
    const statusOf = async (id: string) => ((await (await fetch(`${tenant.baseUrl}/conversions/${id}`, { headers: { authorization: `Bearer ${tenant.apiKey}` } })).json()) as PublicConversion).status;
    const long = await Promise.all([1, 2].map(() => uploadFile(tenant, { target: 'json' }, rows, 'rows.csv')));
    for (const created of long) assert.equal(created.status, 202, JSON.stringify(created.body));
    await waitUntil('a long conversion to run', async () => {
      const states = await Promise.all(long.map((created) => statusOf(created.body.id)));
      return states.includes('processing') ? true : undefined;
    }, 30_000);
    // Another account's conversion is not queued behind both: it runs beside them and ends first.
    await victimConverts(daemon, daemon.apiKey, victimPng);
    const states = await Promise.all(long.map((created) => statusOf(created.body.id)));
    // The tenant holds one worker of two (its share), the other waits; the victim's did not wait
    // for either of them to end.
    assert.deepEqual([...states].sort(), ['processing', 'queued'], `the tenant's conversions: ${states.join(', ')}`);
    await Promise.all(long.map((created) => fetch(`${tenant.baseUrl}/conversions/${created.body.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${tenant.apiKey}` } })));
  });
});

describe('hostile tenant: requests', () => {
  it('100 requests with bad keys: the first ones 401, then 429 with Retry-After, before any key lookup', async () => {
    const statuses = await underAttack(daemon, () => Promise.all(Array.from({ length: 100 }, async (_, i) => {
      const response = await fetch(`${daemon.baseUrl}/account`, { headers: { authorization: `Bearer cvk_guess${i}` } });
      const body = (await response.json()) as { error: { code: string; details?: { limit?: string } } };
      if (response.status === 429) {
        assert.equal(body.error.code, 'rate_limited');
        assert.ok(Number(response.headers.get('retry-after')) >= 1, 'Retry-After on every 429');
      } else {
        assert.equal(body.error.code, 'unauthenticated');
      }
      return response.status;
    })));
    const refused = statuses.filter((status) => status === 429).length;
    assert.ok(refused > 0 && statuses.filter((status) => status === 401).length + refused === 100, `statuses: ${statuses.join(',')}`);
  });

  it('unknown methods against /metrics add no label values to it', async () => {
    const methods = ['PROPFIND', 'MKCOL', 'PURGE', 'LINK', 'UNLINK', 'M-SEARCH', 'NOTIFY', 'SUBSCRIBE', 'REPORT', 'LOCK', 'UNLOCK', 'COPY', 'MOVE', 'SEARCH', 'BIND'];
    await underAttack(daemon, () => Promise.all(methods.flatMap((method) => ['/metrics', '/v1/account', '/nowhere'].map((path) => rawStatus(daemon.url, method, path)))));
    const text = await (await fetch(`${daemon.url}/metrics`)).text();
    const labels = new Set([...text.matchAll(/^convd_http_requests_total\{method="([^"]*)"/gm)].map((match) => match[1]));
    assert.ok(labels.has('other'), 'the unknown methods were counted, as other');
    for (const label of labels) assert.ok(['GET', 'HEAD', 'POST', 'DELETE', 'OPTIONS', 'other'].includes(label!), `method label ${label}`);
  });
});

const MIB = 1024 * 1024;
/** The disk the upload attacks run against: 512 MiB, of which the floor keeps 128 free. */
const DISK_MB = 512;
const FLOOR_MB = 128;
const IDLE_MS = 3000;

describe('hostile tenant: uploads that never end', async () => {
  const disk = await smallDisk(DISK_MB);
  let small: DaemonHandle | null = null;
  let uploader: Client;

  before(async () => {
    if (!disk.dir) return;
    small = await startDaemon({ dataDir: disk.dir, env: { CONVD_DISK_FLOOR_MB: String(FLOOR_MB), CONVD_UPLOAD_IDLE_TIMEOUT: `${IDLE_MS}ms` } });
    uploader = await newAccount(small, 'free');
  });
  after(async () => {
    if (!disk.dir) return;
    // Not dispose(): the mount point cannot be removed while mounted.
    await small?.kill();
    await disk.remove();
  });

  const free = async () => {
    const stats = await statfs(disk.dir!);
    return stats.bavail * stats.bsize;
  };

  it('12 uploads of 98 MB that never send their closing boundary, from one free account: the disk stays above the floor', { skip: disk.skip }, async () => {
    const d = small!;
    const headers = { 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, 'content-length': String(98 * MIB + 4096) };
    let lowest = await free();
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        lowest = Math.min(lowest, await free());
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    })();
    const uploads = await underAttack(d, async () => {
      const all = await Promise.all(Array.from({ length: 12 }, () => RawRequest.post(uploader, headers)));
      // Those refused are answered before they send a byte; the plan's two are not: they send
      // 98 MB and then nothing. Told apart by the answers (all ten refusals come first).
      const answered = new Set<RawRequest>();
      for (const upload of all) void upload.answer.then(() => answered.add(upload), () => undefined);
      await waitUntil('the refusals', () => (answered.size >= 10 ? true : undefined), IDLE_MS);
      const early = all.map((upload) => answered.has(upload));
      await Promise.all(all.map(async (upload, i) => {
        if (early[i]) return;
        await upload.write(multipartHead({ target: 'webp' }, 'never.png'));
        await upload.stream(98 * MIB);
      }));
      return Promise.all(all.map(async (upload, i) => ({ upload, early: early[i], answer: await upload.answer })));
    });
    sampling = false;
    await sampler;
    const refused = uploads.filter((u) => u.early);
    const cut = uploads.filter((u) => !u.early);
    assert.equal(refused.length, 10, 'all but the plan\'s two were refused at once');
    for (const u of refused) {
      assert.equal(u.answer.status, 429);
      assert.equal((u.answer.json as { error: { code: string } }).error.code, 'concurrency_limit');
      assert.equal(u.upload.sent, 0, 'refused before a byte of the body');
    }
    for (const u of cut) {
      assert.equal(u.answer.status, 408, u.answer.text);
      assert.equal((u.answer.json as { error: { code: string } }).error.code, 'request_timeout');
      await u.upload.closed;
    }
    for (const u of uploads) u.upload.destroy();
    assert.ok(lowest >= FLOOR_MB * MIB - MIB, `free space fell to ${(lowest / MIB).toFixed(1)} MiB; the floor is ${FLOOR_MB}`);
    await waitUntil('the stalled uploads\' spool files to be gone', async () => ((await scratchFiles(d)).length === 0 ? true : undefined), 5000);
    assert.ok((await free()) > (DISK_MB - 16) * MIB, 'their space is free again');
  });

  it('300 upload connections that send nothing are answered or cut, and closed', { skip: disk.skip }, async () => {
    const d = small!;
    const headers = { 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, 'content-length': String(MIB) };
    const closedWithin = await underAttack(d, async () => {
      const began = performance.now();
      const silent = await Promise.all(Array.from({ length: 300 }, () => RawRequest.post(uploader, headers)));
      const answers = await Promise.all(silent.map((upload) => upload.answer));
      const closed = await Promise.all(silent.map((upload) => upload.closed));
      const statuses = answers.map((answer) => answer.status);
      assert.equal(statuses.filter((status) => status === 429).length, 298, `statuses: ${[...new Set(statuses)].join(',')}`);
      assert.equal(statuses.filter((status) => status === 408).length, 2);
      return Math.max(...closed) - began;
    });
    assert.ok(closedWithin < IDLE_MS + 5000, `every connection was closed ${Math.round(closedWithin)} ms after it opened`);
    assert.deepEqual(await scratchFiles(d), []);
  });
});
