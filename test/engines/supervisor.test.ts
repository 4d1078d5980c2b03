/**
 * The supervisor of long-running processes (src/engines/process/supervisor.ts), which the helper
 * pools and Chromium's warm browser share, driven with real `node -e` children: a start past its
 * time limit is killed; a recycle waits for the last user; an idle one stops; a kill takes the
 * whole group (a grandchild too); a stop asks, then SIGTERMs, then SIGKILLs one that ignores
 * both; the lifecycle events come in order with their reasons.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { describe, it } from 'node:test';
import type { HelperExit } from '../../src/engines/process/helper-process.ts';
import { Supervised, type HelperLifecycle, type Running, type SupervisedOptions } from '../../src/engines/process/supervisor.ts';
import { isRunning, leftoversOfGroup, waitFor } from '../helpers/engines-proc.ts';

interface Child {
  process: ChildProcess;
  /** What the child printed after `ready` (a grandchild's pid, say). */
  said: string[];
}

/**
 * A child in a group of its own that prints `ready` when it is; its stdin closing is the polite
 * way to ask it to end (a script that should honour it does so itself).
 */
function startChild(script: string, spawned: (pid: number) => void): Promise<Running<Child>> {
  const child = spawn(process.execPath, ['-e', script], { detached: true, stdio: ['pipe', 'pipe', 'ignore'] });
  spawned(child.pid!);
  child.stdin!.on('error', () => undefined);
  let end: HelperExit['end'] = 'exited';
  const exited = new Promise<HelperExit>((resolve) => {
    child.once('close', (code, signal) => resolve({ code, signal, end, stderrTail: '' }));
  });
  const said: string[] = [];
  return new Promise((resolve, reject) => {
    let ready = false;
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (ready) said.push(line);
      else if (line === 'ready') {
        ready = true;
        resolve({
          value: { process: child, said },
          pid: child.pid,
          exited,
          alive: () => child.exitCode === null && child.signalCode === null,
          askToEnd: () => child.stdin!.end(),
          onKill: () => {
            end = 'killed';
          },
        });
      }
    });
    void exited.then((exit) => reject(new Error(`the child ended before it was ready (${exit.code ?? exit.signal})`)));
  });
}

/** Ready at once, ends when its stdin closes. */
const POLITE = "process.stdin.resume(); process.stdin.on('end', () => process.exit(0)); console.log('ready');";
/** Ready at once; neither its stdin closing nor SIGTERM ends it. */
const STUBBORN = "process.on('SIGTERM', () => {}); process.stdin.resume(); setInterval(() => {}, 1000); console.log('ready');";

function options(script: string, extra: Partial<SupervisedOptions<Child>> = {}): SupervisedOptions<Child> & { events: HelperLifecycle[] } {
  const events: HelperLifecycle[] = [];
  return {
    name: 'child', startTimeoutMs: 10_000, stopGraceMs: 1000, start: (spawned) => startChild(script, spawned),
    onLifecycle: (event) => events.push(event), events, ...extra,
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** `work`, or a failure once `ms` have passed: a process nothing ends must fail the test, not hang it. */
async function within<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([work, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

describe('the supervisor of long-running processes', () => {
  it('a start that is not ready within its time limit fails, and its group is killed', async () => {
    let pid: number | undefined;
    const silent = options('setInterval(() => {}, 1000);', {
      startTimeoutMs: 300,
      start: (spawned) => startChild('setInterval(() => {}, 1000);', (started) => {
        pid = started;
        spawned(started);
      }),
    });
    const began = Date.now();
    await assert.rejects(Supervised.start(silent), /child did not start within 300 ms/);
    assert.ok(Date.now() - began < 2000, 'failed at its limit');
    assert.ok(pid !== undefined);
    await waitFor(() => leftoversOfGroup(pid!).length === 0, 2000, 'the silent child to be killed');
    assert.deepEqual(silent.events, [], 'a start that failed is no lifecycle');
  });

  it('retires on its recycleAfter-th use and stops only when the last user lets go', async () => {
    const opts = options(POLITE, { recycleAfter: 2 });
    const supervised = await Supervised.start(opts);
    const first = supervised.use();
    assert.ok(supervised.healthy());
    const second = supervised.use();
    assert.equal(supervised.healthy(), false, 'no new user after the second use');
    assert.throws(() => supervised.use(), /takes no new work/);
    first();
    await sleep(300);
    assert.ok(supervised.alive && isRunning(supervised.pid!), 'still running for its last user');
    second();
    const exit = await supervised.ended;
    assert.equal(exit.code, 0, 'it ended on being asked, not by a signal');
    assert.equal(isRunning(supervised.pid!), false);
    assert.deepEqual(opts.events.map((event) => event.type === 'ended' ? [event.type, event.why, event.tasks] : [event.type]), [['started'], ['ended', 'recycled', 2]]);
  });

  it('a hold (a health check) is no use: it brings no recycle nearer', async () => {
    const supervised = await Supervised.start(options(POLITE, { recycleAfter: 1 }));
    try {
      supervised.hold()();
      supervised.hold()();
      assert.equal(supervised.uses, 0);
      assert.ok(supervised.healthy());
    } finally {
      await supervised.stop('closed');
    }
  });

  it('stops once idle for its idle time; a use meanwhile keeps it', async () => {
    const opts = options(POLITE, { idleStopMs: 400 });
    const supervised = await Supervised.start(opts);
    supervised.use()();
    await sleep(200);
    const held = supervised.use();
    await sleep(600);
    assert.ok(supervised.healthy(), 'not stopped while used');
    const began = Date.now();
    held();
    const exit = await supervised.ended;
    assert.ok(Date.now() - began >= 350, 'stopped after its idle time, not before');
    assert.equal(exit.code, 0);
    assert.deepEqual(opts.events.at(-1) && { why: (opts.events.at(-1) as { why: string }).why }, { why: 'idle' });
  });

  it('health checks (holds that are no use) do not put off the idle stop', async () => {
    const opts = options(POLITE, { idleStopMs: 500 });
    const supervised = await Supervised.start(opts);
    const began = Date.now();
    supervised.use()();
    // A check every 100 ms, each held 20 ms: before, each one's end started the idle time again.
    const checks = setInterval(() => {
      if (!supervised.healthy()) return;
      const release = supervised.hold();
      setTimeout(release, 20);
    }, 100);
    let stopped = false;
    try {
      stopped = await Promise.race([supervised.ended.then(() => true), sleep(3000).then(() => false)]);
    } finally {
      clearInterval(checks);
      if (!stopped) supervised.kill();
    }
    assert.ok(stopped, 'still up 3 s after its last use, its idle time being 500 ms');
    const took = Date.now() - began;
    assert.ok(took >= 450 && took < 2000, `stopped ${took} ms after its last use, its idle time being 500 ms`);
    assert.equal((opts.events.at(-1) as { why: string }).why, 'idle');
  });

  it('kill takes its whole group at once: a grandchild dies too', async () => {
    // The grandchild is a plain child of it: in its group, not in its session's leader's care.
    const script = "const g = require('node:child_process').spawn('sleep', ['1000'], { stdio: 'ignore' }); console.log('ready'); console.log(g.pid); process.on('SIGTERM', () => {}); setInterval(() => {}, 1000);";
    const opts = options(script);
    const supervised = await Supervised.start(opts);
    await waitFor(() => supervised.value.said.length > 0, 5000, 'the grandchild\'s pid');
    const grandchild = Number(supervised.value.said[0]);
    assert.ok(isRunning(grandchild), 'the grandchild runs');
    supervised.use();
    const began = Date.now();
    supervised.kill();
    const exit = await supervised.ended;
    assert.ok(Date.now() - began < 1000, 'at once, not after a grace');
    assert.equal(exit.signal, 'SIGKILL');
    assert.equal(exit.end, 'killed');
    await waitFor(() => !isRunning(grandchild), 2000, 'the grandchild to be gone');
    assert.deepEqual(leftoversOfGroup(supervised.pid!), []);
    assert.equal((opts.events.at(-1) as { why: string }).why, 'died', 'a kill nobody gave a reason for is a death');
  });

  it('a stop asks first: a process that honours it ends well before the grace', async () => {
    const supervised = await Supervised.start(options(POLITE));
    const began = Date.now();
    const exit = await supervised.stop('closed', 5000);
    assert.ok(Date.now() - began < 4000, `ended on being asked (${Date.now() - began} ms)`);
    assert.equal(exit.code, 0);
    assert.equal(exit.signal, null);
  });

  it('a stop SIGTERMs after the grace one that does not end when asked', async () => {
    const supervised = await Supervised.start(options("process.stdin.resume(); setInterval(() => {}, 1000); console.log('ready');"));
    const began = Date.now();
    const exit = await supervised.stop('closed', 400);
    const took = Date.now() - began;
    assert.equal(exit.signal, 'SIGTERM');
    assert.ok(took >= 350 && took < 3000, `SIGTERM after the grace (${took} ms)`);
  });

  it('a stop SIGKILLs after twice the grace one that ignores SIGTERM too', async () => {
    const opts = options(STUBBORN);
    const supervised = await Supervised.start(opts);
    const began = Date.now();
    const exit = await within(supervised.stop('closed', 400), 5000, 'the stop').finally(() => supervised.kill());
    const took = Date.now() - began;
    assert.equal(exit.signal, 'SIGKILL');
    assert.equal(exit.end, 'killed');
    assert.ok(took >= 750, `SIGKILL only after the grace twice (${took} ms)`);
    assert.deepEqual(leftoversOfGroup(supervised.pid!), []);
    assert.equal((opts.events.at(-1) as { why: string }).why, 'closed');
  });

  it('tells its lifecycle in order: started with its time, ended with its uses and the first reason given', async () => {
    const opts = options(POLITE, { recycleAfter: 3 });
    const supervised = await Supervised.start(opts);
    assert.equal(opts.events.length, 1);
    const started = opts.events[0]!;
    assert.equal(started.type, 'started');
    assert.equal(started.pid, supervised.pid);
    assert.ok(started.type === 'started' && started.ms >= 0 && started.ms < 10_000);
    const done = supervised.use();
    supervised.use()();
    // Unhealthy first: the stop that follows does not change the reason.
    supervised.kill('unhealthy');
    done();
    await supervised.stop('closed');
    assert.deepEqual(opts.events.map((event) => event.type), ['started', 'ended']);
    const ended = opts.events[1]!;
    assert.ok(ended.type === 'ended');
    assert.equal(ended.pid, supervised.pid);
    assert.equal(ended.why, 'unhealthy');
    assert.equal(ended.tasks, 2);
    assert.equal(ended.exit.signal, 'SIGKILL');
  });

  it('a process that dies on its own ends as died, with its exit', async () => {
    const opts = options("console.log('ready'); setTimeout(() => process.exit(3), 100);");
    const supervised = await Supervised.start(opts);
    const exit = await supervised.ended;
    assert.equal(exit.code, 3);
    assert.equal(supervised.alive, false);
    assert.equal(supervised.healthy(), false);
    assert.equal((opts.events.at(-1) as { why: string }).why, 'died');
  });
});
