/**
 * The engine host (src/engines/host) and the helper pool under it, with real processes: the
 * JavaScript engines convert in a child process, not in this one; a cancel or a time limit
 * kills that process's whole group at once and the next job gets a new one; a heap blow-up or a
 * memory limit fails the job with memory_limit; a crash fails it with conversion_failed; helpers
 * are recycled, stopped when idle, and none outlives close().
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ConversionFailure } from '../../src/errors/api-error.ts';
import { DEFAULT_INPUT_CAPS } from '../../src/engines/data/input-caps.ts';
import { EngineHost } from '../../src/engines/host/engine-host.ts';
import { HelperPool } from '../../src/engines/process/helper-pool.ts';
import type { EngineJob } from '../../src/engines/types.ts';
import { isRunning, leftoversOfGroup, waitFor } from '../helpers/engines-proc.ts';

const SETTINGS = { maxInputPixels: 100_000_000, engines: { data: { ...DEFAULT_INPUT_CAPS, json: 512 * 1024 * 1024 } } };
let dir: string;
let counter = 0;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'convd-host-'));
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function input(name: string, content: string | Buffer): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, content);
  return path;
}

function job(inputPath: string, source: string, target: string, extra: Partial<EngineJob> = {}): EngineJob {
  return {
    inputPath, outputPath: join(dir, `out-${++counter}.${target}`), source, target, variant: null, options: {},
    signal: new AbortController().signal, onProgress: () => undefined, ...extra,
  };
}

/** Pids of the host's processes now running (its children named by process.title). */
function hostPids(): number[] {
  return pidsWithCommandLine('convd-engine-host');
}

/** Running children of this process whose command line starts with `text`. */
function pidsWithCommandLine(text: string): number[] {
  return readdirSync('/proc').filter((entry) => /^\d+$/.test(entry)).filter((entry) => {
    try {
      return readFileSync(`/proc/${entry}/cmdline`, 'utf8').startsWith(text) && isRunning(Number(entry)) && parentOf(Number(entry)) === process.pid;
    } catch {
      return false;
    }
  }).map(Number);
}

function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

async function failure(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  assert.fail('expected a failure');
}

/** A JSON array whose parse needs far more heap than its bytes: [[0,0,...],...]. */
function heavyJson(bytes: number): string {
  const row = `[${Array.from({ length: 50 }, () => '0').join(',')}]`;
  return `[${Array.from({ length: Math.ceil(bytes / (row.length + 1)) }, () => row).join(',')}]`;
}

describe('engine host', () => {
  it('converts in a child process: Markdown and CSV, decoded, with progress', async () => {
    const host = new EngineHost({ processes: 1, memoryLimitMb: 512 });
    try {
      const progress: number[] = [];
      const md = job(await input('a.md', '# Title\n\n- [x] done\n\n| a |\n|---|\n| 1 |\n'), 'md', 'html', { options: { full_document: false }, onProgress: (p) => progress.push(p) });
      await host.convert('data', SETTINGS, md);
      const html = await readFile(md.outputPath, 'utf8');
      assert.match(html, /<h1>Title<\/h1>/);
      assert.match(html, /<input type="checkbox" checked(="[^"]*")? disabled(="[^"]*")? \/?>/);
      assert.match(html, /<td>1<\/td>/);
      assert.deepEqual([progress[0], progress.at(-1)], [0, 100]);
      const csv = job(await input('a.csv', 'a,b\n1,2\n'), 'csv', 'json', { options: { header: true, delimiter: 'auto', indent: 0 } });
      await host.convert('data', SETTINGS, csv);
      assert.deepEqual(JSON.parse(await readFile(csv.outputPath, 'utf8')), [{ a: '1', b: '2' }]);
      const pids = hostPids();
      assert.equal(pids.length, 1, 'one host process, kept for the next job');
      assert.notEqual(pids[0], process.pid);
      // Below the daemon's priority, as a thread and (with autogroup scheduling) as a session.
      const stat = readFileSync(`/proc/${pids[0]}/stat`, 'utf8');
      assert.equal(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16], '10');
      if (existsSync(`/proc/${pids[0]}/autogroup`)) assert.match(readFileSync(`/proc/${pids[0]}/autogroup`, 'utf8'), / nice 10\n?$/);
      assert.equal((await host.status()).started, 1);
    } finally {
      await host.close();
    }
    assert.deepEqual(hostPids(), [], 'close() ends the host process');
  });

  it('an engine failure comes back as the same ConversionFailure; the host lives on', async () => {
    const host = new EngineHost({ processes: 1, memoryLimitMb: 512 });
    try {
      const broken = await failure(host.convert('data', SETTINGS, job(await input('bad.json', '{"a": [1, 2'), 'json', 'yaml')));
      assert.ok(broken instanceof ConversionFailure);
      assert.equal(broken.code, 'input_invalid');
      assert.match(broken.message, /line 1, column \d+/);
      const capped = await failure(host.convert('data', SETTINGS, job(await input('rows.ndjson', '{"a":1}\n'.repeat(20_000)), 'ndjson', 'json', { maxOutputBytes: 10_000 })));
      assert.ok(capped instanceof ConversionFailure);
      assert.equal(capped.code, 'conversion_failed');
      assert.match(capped.message, /larger than its limit/);
      assert.equal((await host.status()).started, 1);
      assert.equal((await host.status()).lost, 0);
    } finally {
      await host.close();
    }
  });

  it('an abort kills the host process group at once; the next job starts a new host', async () => {
    const host = new EngineHost({ processes: 1, memoryLimitMb: 1024 });
    try {
      await host.convert('data', SETTINGS, job(await input('warm.csv', 'a\n1\n'), 'csv', 'json', { options: { header: true, delimiter: 'auto', indent: 2 } }));
      const [pid] = hostPids();
      assert.ok(pid);
      // Several seconds of JSON parsing and writing in the host.
      const big = await input('big.json', heavyJson(60 * 1024 * 1024));
      const controller = new AbortController();
      const reason = new Error('cancelled by the test');
      const running = host.convert('data', SETTINGS, job(big, 'json', 'yaml', { signal: controller.signal }));
      setTimeout(() => controller.abort(reason), 300);
      const began = Date.now();
      assert.equal(await failure(running), reason);
      assert.ok(Date.now() - began < 2000, 'the abort did not wait for the work');
      await waitFor(() => leftoversOfGroup(pid).length === 0, 2000, 'the host group to be gone');
      await host.convert('data', SETTINGS, job(await input('next.csv', 'a\n1\n'), 'csv', 'json', { options: { header: true, delimiter: 'auto', indent: 2 } }));
      const [next] = hostPids();
      assert.ok(next && next !== pid, 'a new host process');
      assert.equal((await host.status()).lost, 1);
    } finally {
      await host.close();
    }
  });

  it('a job past the memory limit fails memory_limit and costs only its own host', async () => {
    const host = new EngineHost({ processes: 1, memoryLimitMb: 160 });
    try {
      const big = await input('heavy.json', heavyJson(40 * 1024 * 1024));
      const error = await failure(host.convert('data', SETTINGS, job(big, 'json', 'yaml')));
      assert.ok(error instanceof ConversionFailure, String(error));
      assert.equal(error.code, 'memory_limit');
      assert.match(error.message, /160 MB/);
      const small = job(await input('small.json', '[{"a":1}]'), 'json', 'csv', { options: { header: true, delimiter: 'comma' } });
      await host.convert('data', SETTINGS, small);
      assert.equal(await readFile(small.outputPath, 'utf8'), 'a\n1\n');
    } finally {
      await host.close();
    }
  });

  it('a host that dies mid-job fails the job with conversion_failed', async () => {
    const host = new EngineHost({ processes: 1, memoryLimitMb: 1024 });
    try {
      await host.convert('data', SETTINGS, job(await input('warm2.csv', 'a\n1\n'), 'csv', 'json', { options: { header: true, delimiter: 'auto', indent: 2 } }));
      const [pid] = hostPids();
      const big = await input('big2.json', heavyJson(60 * 1024 * 1024));
      const running = host.convert('data', SETTINGS, job(big, 'json', 'yaml'));
      setTimeout(() => process.kill(pid!, 'SIGKILL'), 300);
      const error = await failure(running);
      assert.ok(error instanceof ConversionFailure, String(error));
      assert.equal(error.code, 'conversion_failed');
      assert.match(error.message, /stopped unexpectedly \(signal SIGKILL\)/);
    } finally {
      await host.close();
    }
  });

  it('recycles a host after its number of jobs', async () => {
    const host = new EngineHost({ processes: 1, memoryLimitMb: 512, recycleAfter: 2 });
    try {
      const convert = async () => host.convert('data', SETTINGS, job(await input(`r${++counter}.csv`, 'a\n1\n'), 'csv', 'ndjson', { options: { header: true, delimiter: 'auto' } }));
      await convert();
      const [first] = hostPids();
      await convert();
      await waitFor(() => !isRunning(first!), 3000, 'the recycled host to end');
      await convert();
      const [second] = hostPids();
      assert.ok(second && second !== first);
      assert.equal((await host.status()).started, 2);
    } finally {
      await host.close();
    }
  });

  it('stops a host that stays idle', async () => {
    const host = new EngineHost({ processes: 1, memoryLimitMb: 512, idleStopMs: 300 });
    try {
      await host.convert('data', SETTINGS, job(await input(`idle${++counter}.csv`, 'a\n1\n'), 'csv', 'ndjson', { options: { header: true, delimiter: 'auto' } }));
      assert.equal(hostPids().length, 1);
      await waitFor(() => hostPids().length === 0, 5000, 'the idle host to stop');
      assert.equal((await host.status()).running, 0);
    } finally {
      await host.close();
    }
  });
});

describe('helper pool', () => {
  it('a helper that never says it is ready is killed at the start time limit', async () => {
    const pool = new HelperPool({
      name: 'silent', size: 1, recycleAfter: 10,
      helper: () => ({ name: 'silent', command: { command: process.execPath, args: ['-e', 'setInterval(() => {}, 1000)'] }, startTimeoutMs: 300 }),
    });
    const began = Date.now();
    const error = await failure(pool.run({}, { signal: new AbortController().signal }));
    assert.match(String(error), /did not start within 300 ms/);
    assert.ok(Date.now() - began < 2000);
    await pool.close();
    await waitFor(() => pidsWithCommandLine(process.execPath).length === 0, 2000, 'the silent helper to be killed');
  });

  it('more tasks than helpers wait their turn, one task per helper at a time', async () => {
    // A helper that answers each request after 100 ms with the number of tasks it holds at once.
    const script = `
      const out = require('node:fs').createWriteStream('', { fd: 3 });
      let busy = 0;
      out.write(JSON.stringify({ type: 'ready' }) + '\\n');
      require('node:readline').createInterface({ input: process.stdin }).on('line', () => {
        busy++;
        setTimeout(() => { out.write(JSON.stringify({ type: 'result', ok: true, value: busy }) + '\\n'); busy--; }, 100);
      });`;
    const pool = new HelperPool({
      name: 'echo', size: 2, recycleAfter: 100,
      helper: () => ({ name: 'echo', command: { command: process.execPath, args: ['-e', script] }, startTimeoutMs: 10_000 }),
    });
    try {
      const results = await Promise.all(Array.from({ length: 6 }, () => pool.run({}, { signal: new AbortController().signal })));
      assert.deepEqual(results, [1, 1, 1, 1, 1, 1], 'no helper ever held two tasks');
      assert.equal(pool.status().started, 2);
    } finally {
      await pool.close();
    }
  });

  /**
   * A helper that, like LibreOffice's bridge, answers a task before it has finished with it: the
   * result says `settling`, and `settled` follows once the rest is done (on SIGUSR2 here, at once,
   * or never, or the process ends instead). It reads its requests one at a time, in order, and
   * answers each with its pid and how many it has answered.
   */
  const SETTLING_HELPER = `
    const out = require('node:fs').createWriteStream('', { fd: 3 });
    const say = (message) => out.write(JSON.stringify(message) + '\\n');
    const queue = [];
    let settling = null;
    let answered = 0;
    const next = () => {
      if (settling || queue.length === 0) return;
      const request = JSON.parse(queue.shift());
      const result = { type: 'result', ok: true, value: { pid: process.pid, answered: ++answered }, settling: true };
      // Settled at once: both lines in one write, so that convd reads them together.
      if (request.then === 'now') return out.write(JSON.stringify(result) + '\\n' + JSON.stringify({ type: 'settled' }) + '\\n', next);
      say(result);
      settling = request.then ?? 'signal';
      if (settling === 'exit') setTimeout(() => process.exit(1), 100);
    };
    process.on('SIGUSR2', () => {
      if (settling !== 'signal') return;
      settling = null;
      say({ type: 'settled' });
      next();
    });
    say({ type: 'ready' });
    require('node:readline').createInterface({ input: process.stdin }).on('line', (line) => {
      queue.push(line);
      next();
    });`;

  function settlingPool(size: number, settleTimeoutMs?: number): HelperPool {
    return new HelperPool({
      name: 'settling', size, recycleAfter: 100,
      helper: () => ({ name: 'settling', command: { command: process.execPath, args: ['-e', SETTLING_HELPER] }, startTimeoutMs: 10_000, ...(settleTimeoutMs ? { settleTimeoutMs } : {}) }),
    });
  }

  type Answer = { pid: number; answered: number };
  const task = () => ({ signal: new AbortController().signal });
  /** What `promise` settles to, or null if it has not within `ms` (a wrong pool would wait for good). */
  const within = <T>(promise: Promise<T>, ms: number): Promise<T | null> =>
    Promise.race([promise, new Promise<null>((resolve) => setTimeout(() => resolve(null), ms).unref())]);

  it('a result that says settling answers its task at once; the next task is sent once the helper has settled', async () => {
    const pool = settlingPool(1);
    try {
      const first = await pool.run({}, task()) as Answer;
      assert.equal(first.answered, 1, 'answered while the helper still settles (it settles only on SIGUSR2)');
      let second: Answer | null = null;
      // The task's clock (its time limit, its engine time) starts when it is sent.
      let starts = 0;
      const running = pool.run({}, { ...task(), onStart: () => starts++ }).then((answer) => (second = answer as Answer));
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(second, null, 'not answered before the helper settled');
      assert.equal(starts, 0, 'not started while the helper settles the task before');
      process.kill(first.pid, 'SIGUSR2');
      await running;
      assert.deepEqual(second, { pid: first.pid, answered: 2 }, 'the same helper took it once settled');
      assert.equal(starts, 1);
      assert.equal(pool.status().started, 1);
    } finally {
      await pool.close();
    }
  });

  it('of two warm helpers, a task goes to the one that is not settling', async () => {
    const pool = settlingPool(2);
    try {
      // The first slot's helper settles on SIGUSR2 only, the second's at once.
      const [a, b] = await Promise.all([pool.run({}, task()), pool.run({ then: 'now' }, task())]) as Answer[];
      assert.notEqual(a!.pid, b!.pid);
      const third = await within(pool.run({}, task()) as Promise<Answer>, 3000);
      assert.equal(third?.pid, b!.pid, 'the task went to the settled helper, not behind the one still settling');
    } finally {
      await pool.close();
    }
  });

  it('a helper that ends while settling: the task waiting for it goes to a new helper', async () => {
    const pool = settlingPool(1);
    try {
      const first = await pool.run({ then: 'exit' }, task()) as Answer;
      const second = await pool.run({}, task()) as Answer;
      assert.notEqual(second.pid, first.pid);
      assert.equal(second.answered, 1);
      assert.equal(pool.status().started, 2);
    } finally {
      await pool.close();
    }
  });

  it('a task cancelled while it waits for a settling helper ends with its reason and kills no one', async () => {
    const pool = settlingPool(1);
    try {
      const first = await pool.run({}, task()) as Answer;
      const controller = new AbortController();
      const waiting = failure(pool.run({}, { signal: controller.signal }));
      setTimeout(() => controller.abort(new Error('cancelled by its client')), 200);
      assert.match(String(await within(waiting, 5000) ?? 'still waiting after 5 s'), /cancelled by its client/);
      assert.ok(isRunning(first.pid), 'the helper settling the task before was not killed');
      process.kill(first.pid, 'SIGUSR2');
      const next = await pool.run({}, task()) as Answer;
      assert.deepEqual(next, { pid: first.pid, answered: 2 }, 'the cancelled task was never sent to it');
    } finally {
      await pool.close();
    }
  });

  it('a helper that never settles is killed after its settle time; the task waiting for it goes to a new one', async () => {
    const pool = settlingPool(1, 400);
    try {
      const first = await pool.run({ then: 'never' }, task()) as Answer;
      const second = await within(pool.run({}, task()) as Promise<Answer>, 10_000);
      assert.ok(second, 'answered within 10 s');
      assert.notEqual(second.pid, first.pid);
      await waitFor(() => !isRunning(first.pid), 5000, 'the stuck helper to be killed');
    } finally {
      await pool.close();
    }
  });
});
