import assert from 'node:assert/strict';
import { mkdir, readFile, readdir, stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { PathQueue } from '../../cli/watch/queue.ts';
import { cleanEnv, tempDir } from '../helpers/cli-helpers.ts';
import { startConv, type ConvProcess } from '../helpers/cli-process.ts';
import { startDaemon, type DaemonHandle } from '../helpers/daemon.ts';

/**
 * `conv watch` as a child process: files dropped into a temp dir while it runs, results decoded
 * with sharp, a corrupt file reported without stopping the watch, SIGINT ending it with exit 0.
 * Once in-process (no server configured) and once against a real convd.
 */

interface Conversion {
  id: string;
  status: string;
  original_name: string;
  error: { code: string } | null;
}

let dir: { path: string; remove: () => Promise<void> };
const running: ConvProcess[] = [];

before(async () => {
  dir = await tempDir('conv-watch-');
});
after(async () => {
  for (const process of running) process.kill();
  await dir?.remove();
});

const png = (width: number, height: number, color: string) =>
  sharp({ create: { width, height, channels: 3, background: color } }).png().toBuffer();

/** Decoded from the bytes: libvips caches by file name, and a rewritten file must be read afresh. */
async function webpSize(path: string): Promise<string> {
  const meta = await sharp(await readFile(path)).metadata();
  assert.equal(meta.format, 'webp', `${path} is ${meta.format}`);
  return `${meta.width}x${meta.height}`;
}

function watchIn(base: string, args: string[], extraEnv: NodeJS.ProcessEnv = {}): ConvProcess {
  const process = startConv(['watch', 'in', '--to', 'webp', '--settle', '150', ...args], {
    cwd: base,
    env: cleanEnv({ HOME: base, XDG_CONFIG_HOME: join(base, 'config'), XDG_CACHE_HOME: join(dir.path, 'cache'), ...extraEnv }),
  });
  running.push(process);
  return process;
}

const succeeded = (p: ConvProcess, name: string) => () => p.jsonLines<Conversion>().some((c) => c.original_name === name && c.status === 'succeeded');

describe('conv watch, in-process', () => {
  it('converts files present at start and dropped later, reports a corrupt one and goes on, stops on SIGINT (exit 0)', async () => {
    const base = join(dir.path, 'local');
    await mkdir(join(base, 'in', 'sub'), { recursive: true });
    await mkdir(join(base, 'out'), { recursive: true });
    await writeFile(join(base, 'in', 'early.png'), await png(30, 20, '#ff0000'));
    // Present at start with a newer result: not converted again.
    await writeFile(join(base, 'in', 'done.png'), await png(10, 10, '#00ff00'));
    await writeFile(join(base, 'out', 'done.webp'), 'an older run wrote this');
    const past = new Date(Date.now() - 60_000);
    await utimes(join(base, 'in', 'done.png'), past, past);

    const watch = watchIn(base, ['--out', 'out', '--json']);
    await watch.waitFor(succeeded(watch, 'early.png'), 'early.png converted at start');
    await watch.waitFor(() => /watching in: converting to webp into out/.test(watch.stderr()), 'the watching note');
    assert.equal(await webpSize(join(base, 'out', 'early.webp')), '30x20');

    // A file written in two parts with a pause shorter than --settle: converted once, whole.
    const late = await png(64, 48, '#0000ff');
    await writeFile(join(base, 'in', 'sub', 'late.png'), late.subarray(0, 40));
    await sleep(60);
    await writeFile(join(base, 'in', 'sub', 'late.png'), late);
    await writeFile(join(base, 'in', 'broken.png'), 'not a png, whatever the name says');
    await writeFile(join(base, 'in', 'notes.txt'), 'no image here');
    await writeFile(join(base, 'in', 'notes.qqq'), 'a format nobody converts');
    await writeFile(join(base, 'in', '.hidden.png'), await png(5, 5, '#ffffff'));
    await watch.waitFor(succeeded(watch, 'late.png'), 'late.png converted');
    await watch.waitFor(() => /error: input_invalid: in\/broken\.png: /.test(watch.stderr()), 'the corrupt file reported');
    assert.equal(await webpSize(join(base, 'out', 'sub', 'late.webp')), '64x48');

    // After the failure the watch goes on: a new file, and a changed one converted again.
    await writeFile(join(base, 'in', 'after.png'), await png(8, 6, '#888888'));
    await watch.waitFor(succeeded(watch, 'after.png'), 'after.png converted after the failure');
    await writeFile(join(base, 'in', 'early.png'), await png(50, 40, '#ff00ff'));
    await watch.waitFor(() => watch.jsonLines<Conversion>().filter((c) => c.original_name === 'early.png').length === 2, 'early.png converted again');
    assert.equal(await webpSize(join(base, 'out', 'early.webp')), '50x40');
    // Something dropped into --out is never an input.
    await writeFile(join(base, 'out', 'stray.png'), await png(4, 4, '#000000'));
    await sleep(500);

    watch.child.kill('SIGINT');
    assert.equal(await watch.exited, 0, watch.stderr());

    const lines = watch.jsonLines<Conversion>();
    const failed = lines.filter((c) => c.status === 'failed');
    assert.deepEqual(failed.map((c) => [c.original_name, c.error?.code]), [['broken.png', 'input_invalid']]);
    assert.deepEqual(lines.filter((c) => c.status === 'succeeded').map((c) => c.original_name).sort(), ['after.png', 'early.png', 'early.png', 'late.png']);
    assert.equal(lines.filter((c) => c.original_name === 'late.png').length, 1, 'the half-written file was not converted');
    assert.match(watch.stderr(), /skipped in\/notes\.txt: /);
    // In-process there is no server to blame.
    assert.match(watch.stderr(), /skipped in\/notes\.qqq: qqq is not a format conv converts/);
    assert.equal(await readdir(join(base, 'out')).then((names) => names.sort().join(' ')), 'after.webp done.webp early.webp stray.png sub');
    assert.equal((await stat(join(base, 'out', 'done.webp'))).size, 'an older run wrote this'.length);
  });

  it('--no-initial leaves existing files alone; results beside the inputs are not taken as inputs', async () => {
    const base = join(dir.path, 'beside');
    await mkdir(join(base, 'in'), { recursive: true });
    await writeFile(join(base, 'in', 'old.png'), await png(6, 6, '#123456'));
    const watch = watchIn(base, ['--no-initial']);
    await watch.waitFor(() => /watching in: converting to webp beside each file/.test(watch.stderr()), 'the watching note');
    await writeFile(join(base, 'in', 'new.png'), await png(12, 9, '#654321'));
    await watch.waitFor(() => /in\/new\.png → in\/new\.webp \(\d+ B\) cnv_/.test(watch.stdout()), 'new.png converted');
    await sleep(500);
    watch.child.kill('SIGTERM');
    assert.equal(await watch.exited, 0, watch.stderr());
    assert.equal(await webpSize(join(base, 'in', 'new.webp')), '12x9');
    assert.deepEqual((await readdir(join(base, 'in'))).sort(), ['new.png', 'new.webp', 'old.png']);
    assert.equal(watch.stdout().trim().split('\n').length, 1, watch.stdout());
  });

  it('fails at once on a target nothing converts to, or a directory that is not there (exit 2)', async () => {
    const base = join(dir.path, 'usage');
    await mkdir(join(base, 'in'), { recursive: true });
    const typo = watchIn(base, ['--to', 'wepb']);
    assert.equal(await typo.exited, 2);
    assert.match(typo.stderr(), /error: unsupported_conversion: nothing converts to "wepb"/);
    const missing = startConv(['watch', 'nowhere', '--to', 'webp'], { cwd: base, env: cleanEnv({ HOME: base }) });
    assert.equal(await missing.exited, 2);
    assert.match(missing.stderr(), /not a directory: nowhere/);
    const badOption = watchIn(base, ['-O', 'quality=500']);
    assert.equal(await badOption.exited, 2);
    assert.match(badOption.stderr(), /-O quality/);
  });
});

describe('conv watch against convd', () => {
  let daemon: DaemonHandle;
  before(async () => {
    daemon = await startDaemon();
  });
  after(() => daemon?.dispose());

  it('uploads each new file and downloads the result', async () => {
    const base = join(dir.path, 'remote');
    await mkdir(join(base, 'in'), { recursive: true });
    const watch = watchIn(base, ['--out', 'out', '--json', '-O', 'quality=60'], { CONV_BASE_URL: daemon.baseUrl, CONV_API_KEY: daemon.apiKey });
    await watch.waitFor(() => /watching in/.test(watch.stderr()), 'the watching note');
    await writeFile(join(base, 'in', 'remote.png'), await png(33, 22, '#abcdef'));
    await writeFile(join(base, 'in', 'bad.png'), 'corrupt');
    await watch.waitFor(succeeded(watch, 'remote.png'), 'remote.png converted on the server');
    await watch.waitFor(() => /error: input_invalid: in\/bad\.png/.test(watch.stderr()), 'bad.png reported');
    watch.child.kill('SIGINT');
    assert.equal(await watch.exited, 0, watch.stderr());
    assert.equal(await webpSize(join(base, 'out', 'remote.webp')), '33x22');
    const done = watch.jsonLines<Conversion & { options: Record<string, unknown> }>().find((c) => c.original_name === 'remote.png')!;
    // The conversion is the server's: it is there to fetch, with the option applied.
    const response = await fetch(`${daemon.baseUrl}/conversions/${done.id}`, { headers: { authorization: `Bearer ${daemon.apiKey}` } });
    const fetched = (await response.json()) as { status: string; options: Record<string, unknown> };
    assert.equal(fetched.status, 'succeeded');
    assert.equal(fetched.options.quality, 60);
  });
  /** A PNG of noise that takes the daemon seconds to encode as AVIF (2 to 5, by size). */
  const slowPng = (width: number, height: number) => sharp({ create: { width, height, channels: 3, background: '#888888', noise: { type: 'gaussian', mean: 128, sigma: 60 } } }).png().toBuffer();

  async function waitUntilProcessing(): Promise<string> {
    // Up to 20 s: on a loaded machine the upload and the queue take their time.
    for (let attempt = 0; attempt < 400; attempt += 1) {
      const response = await fetch(`${daemon.baseUrl}/conversions?status=processing`, { headers: { authorization: `Bearer ${daemon.apiKey}` } });
      const page = (await response.json()) as { data: { id: string }[] };
      if (page.data[0]) return page.data[0].id;
      await sleep(50);
    }
    throw new Error('no conversion reached processing');
  }

  it('first SIGINT finishes the conversion in flight and writes it (exit 0); a second one cancels it (exit 130)', async () => {
    const base = join(dir.path, 'interrupt');
    await mkdir(join(base, 'in'), { recursive: true });
    const env = { CONV_BASE_URL: daemon.baseUrl, CONV_API_KEY: daemon.apiKey };

    const finishing = watchIn(base, ['--to', 'avif', '--out', 'out'], env);
    await finishing.waitFor(() => /watching in/.test(finishing.stderr()), 'the watching note');
    await writeFile(join(base, 'in', 'first.png'), await slowPng(600, 450));
    await waitUntilProcessing();
    finishing.child.kill('SIGINT');
    assert.equal(await finishing.exited, 0, finishing.stderr());
    assert.match(finishing.stderr(), /stopping: finishing 1 conversion \(Ctrl-C again to cancel\)/, finishing.stderr());
    const meta = await sharp(await readFile(join(base, 'out', 'first.avif'))).metadata();
    assert.deepEqual([meta.format, meta.width, meta.height], ['heif', 600, 450]);

    const cancelling = watchIn(base, ['--to', 'avif', '--out', 'out2', '--no-initial'], env);
    await cancelling.waitFor(() => /watching in/.test(cancelling.stderr()), 'the watching note');
    await writeFile(join(base, 'in', 'second.png'), await slowPng(900, 700));
    const id = await waitUntilProcessing();
    cancelling.child.kill('SIGINT');
    await cancelling.waitFor(() => /stopping: finishing 1 conversion/.test(cancelling.stderr()), 'the stopping note');
    cancelling.child.kill('SIGINT');
    assert.equal(await cancelling.exited, 130, cancelling.stderr());
    assert.match(cancelling.stderr(), /cancelling 1 conversion/, cancelling.stderr());
    const response = await fetch(`${daemon.baseUrl}/conversions/${id}`, { headers: { authorization: `Bearer ${daemon.apiKey}` } });
    assert.equal(((await response.json()) as { status: string }).status, 'cancelled');
    assert.deepEqual(await readdir(join(base, 'out2')), []);
  });
});

describe('PathQueue', () => {
  it('coalesces events per file, re-runs a file changed while converting, respects the limit, drops waiting work on stop', async () => {
    const runs: string[] = [];
    let concurrent = 0;
    let peak = 0;
    const gates = new Map<string, () => void>();
    const queue = new PathQueue(2, async (path) => {
      runs.push(path);
      concurrent += 1;
      peak = Math.max(peak, concurrent);
      await new Promise<void>((resolve) => gates.set(`${path}#${runs.filter((r) => r === path).length}`, resolve));
      concurrent -= 1;
    });
    queue.push('a');
    queue.push('a'); // still waiting? no: running -> marked for a second run
    queue.push('b');
    queue.push('c');
    queue.push('c'); // waiting: coalesced
    assert.deepEqual(runs, ['a', 'b']);
    gates.get('a#1')!();
    await sleep(5);
    assert.deepEqual(runs, ['a', 'b', 'c']);
    gates.get('b#1')!();
    await sleep(5);
    assert.deepEqual(runs, ['a', 'b', 'c', 'a']);
    queue.push('d');
    assert.equal(queue.stop(), 1);
    gates.get('c#1')!();
    gates.get('a#2')!();
    await queue.drained();
    assert.deepEqual(runs, ['a', 'b', 'c', 'a']);
    assert.equal(peak, 2);
  });
});
