import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ConversionFailure } from '../../src/errors/api-error.ts';
import { ensureExecutable } from '../../src/engines/media/binaries.ts';
import { liveChildPids, runProcess } from '../../src/engines/subprocess.ts';
import { HAS_SETPRIV, isRunning, leftoversOfGroup, processesInGroup, waitFor } from '../helpers/engines-proc.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Starts `sh -c script`; `started` resolves with its pid once it runs (the script prints `$$` first). */
function startShell(script: string, options: Parameters<typeof runProcess>[2] = {}) {
  let onPid: (pid: number) => void = () => undefined;
  const started = new Promise<number>((resolve) => (onPid = resolve));
  let pid = 0;
  const promise = runProcess('sh', ['-c', `echo $$; ${script}`], {
    ...options,
    onStdoutLine: (line) => {
      if (!pid) onPid((pid = Number(line)));
    },
  });
  // Callers await `promise` after `started`; keep an early rejection from counting as unhandled.
  promise.catch(() => undefined);
  return { started, promise };
}

/**
 * The leader is reaped before runProcess settles; the rest of its group was sent SIGKILL, which
 * the kernel completes a moment later (a grandchild can still show as running for some ms).
 */
async function assertGroupGone(pid: number): Promise<void> {
  assert.ok(!processesInGroup(pid).some((p) => p.pid === pid), 'the leader was reaped');
  await waitFor(() => leftoversOfGroup(pid).length === 0, 1000, 'nothing of the group to run');
}

describe('runProcess', () => {
  it('returns the exit code and streams stdout and stderr line by line', async () => {
    const out: string[] = [];
    const err: string[] = [];
    const result = await runProcess('sh', ['-c', 'printf "a\\nb\\r\\nc"; printf "e1\\re2\\n" >&2; exit 3'], {
      onStdoutLine: (line) => out.push(line),
      onStderrLine: (line) => err.push(line),
    });
    assert.equal(result.code, 3);
    assert.deepEqual(out, ['a', 'b', 'c']);
    assert.deepEqual(err, ['e1', 'e2']);
    assert.equal(result.stderrTail, 'e1\ne2');
  });

  it('keeps only a bounded tail of a large stderr, newest lines last', async () => {
    // 200 000 numbered lines (~1.3 MB) on stderr.
    const result = await runProcess('sh', ['-c', 'seq 1 200000 >&2'], { stderrTailBytes: 4096 });
    assert.equal(result.code, 0);
    assert.ok(result.stderrTail.length <= 4096, `tail is ${result.stderrTail.length} chars`);
    assert.ok(result.stderrTail.endsWith('199999\n200000'));
    assert.ok(!result.stderrTail.includes('\n1\n'));
  });

  it('cuts a line that never ends instead of buffering it', async () => {
    const lines: string[] = [];
    await runProcess('sh', ['-c', 'head -c 3000000 /dev/zero | tr "\\0" x >&2'], { onStderrLine: (l) => lines.push(l) });
    assert.equal(lines.length, 1);
    assert.ok(lines[0]!.length < 20_000 && lines[0]!.endsWith('…'));
  });

  it('runs an engine at a lower priority, as a thread and as a scheduling group', async () => {
    // The shell reports its own nice value (field 19 of /proc/self/stat) and its autogroup.
    const lines: string[] = [];
    // The daemon lowers the group's priority just after the spawn: the shell waits for it (a
    // loaded machine may run the child first), up to half a second.
    const script = 'cut -d" " -f19 /proc/$$/stat; for i in 1 2 3 4 5 6 7 8 9 10; do grep -q " nice 10$" /proc/$$/autogroup 2>/dev/null && break; sleep 0.05; done; cat /proc/$$/autogroup 2>/dev/null || echo none';
    const result = await runProcess('sh', ['-c', script], {
      niceness: 10, onStdoutLine: (line) => lines.push(line),
    });
    assert.equal(result.code, 0);
    assert.equal(lines[0], '10', 'nice 10 from the start (threads it makes have it too)');
    // With autogroup scheduling, a session's nice value is what weighs against the daemon's.
    if (lines[1] !== 'none') assert.match(lines[1]!, / nice 10$/);
  });

  it('a missing command run with a niceness is still ENOENT, not the exit status of nice', async () => {
    await assert.rejects(runProcess('/nonexistent/binary', [], { niceness: 10 }), /ENOENT/);
    assert.deepEqual(liveChildPids(), []);
  });

  it('rejects when the command does not exist, and leaves nothing registered', async () => {
    await assert.rejects(runProcess('/nonexistent/binary', []), /ENOENT/);
    assert.deepEqual(liveChildPids(), []);
  });

  it('does not start anything for an already aborted signal', async () => {
    const controller = new AbortController();
    controller.abort(new Error('already'));
    await assert.rejects(runProcess('sleep', ['5'], { signal: controller.signal }), /already/);
    assert.deepEqual(liveChildPids(), []);
  });

  it('on abort kills the whole process group, then rejects with the reason', async () => {
    const controller = new AbortController();
    // The shell starts a background grandchild in the same group: both must go.
    const run = startShell('sleep 30 & sleep 30; wait', { signal: controller.signal });
    const pid = await run.started;
    await waitFor(() => processesInGroup(pid).length >= 3, 5000, 'shell and two sleeps');
    assert.deepEqual(liveChildPids(), [pid]);
    const reason = new Error('cancelled by user');
    const began = Date.now();
    controller.abort(reason);
    await assert.rejects(run.promise, (error) => error === reason);
    assert.ok(Date.now() - began < 1500, 'SIGTERM was enough; no wait for the grace period');
    await assertGroupGone(pid);
    assert.deepEqual(liveChildPids(), []);
  });

  it('sends SIGKILL after the grace period to a group that ignores SIGTERM', async () => {
    const controller = new AbortController();
    const run = startShell('trap "" TERM; sleep 30 & sleep 30; wait', { signal: controller.signal, killGraceMs: 300 });
    const pid = await run.started;
    await waitFor(() => processesInGroup(pid).length >= 3, 5000, 'shell and two sleeps');
    const began = Date.now();
    controller.abort(new Error('stop'));
    await assert.rejects(run.promise, /stop/);
    const took = Date.now() - began;
    assert.ok(took >= 280 && took < 3000, `took ${took} ms`);
    await assertGroupGone(pid);
  });

  it('enforces a time limit with ConversionFailure("timeout")', async () => {
    const run = startShell('sleep 30', { timeoutMs: 300 });
    const pid = await run.started;
    await assert.rejects(run.promise, (error) => error instanceof ConversionFailure && error.code === 'timeout');
    await assertGroupGone(pid);
  });

  it('memoryLimitMb caps what the process may map (prlimit): an allocation past it fails, one within passes', { skip: !existsSync('/usr/bin/prlimit') && 'needs util-linux prlimit' }, async () => {
    // python3 maps a 300 MB buffer: refused under 200 MB, fine under 1000 MB.
    const script = 'import sys\ntry:\n  b = bytearray(300 * 1024 * 1024)\nexcept MemoryError:\n  sys.exit(3)';
    assert.equal((await runProcess('python3', ['-c', script], { memoryLimitMb: 200 })).code, 3);
    assert.equal((await runProcess('python3', ['-c', script], { memoryLimitMb: 1000 })).code, 0);
    assert.equal((await runProcess('python3', ['-c', script], { memoryLimitMb: 200, niceness: 5, dieWithParent: true })).code, 3, 'with the other wrappers too');
    await assert.rejects(runProcess('/nonexistent/engine', [], { memoryLimitMb: 200 }), { code: 'ENOENT' });
  });

  it('kills its children when the parent process exits', async () => {
    // A separate Node process starts a long child through runProcess, then exits.
    const script = [
      `import { runProcess } from ${JSON.stringify(join(ROOT, 'src/engines/subprocess.ts'))};`,
      `runProcess('sh', ['-c', 'echo $$; exec sleep 30'], { onStdoutLine: (line) => { console.log(line); setTimeout(() => process.exit(0), 50); } });`,
    ].join('\n');
    const parent = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    let output = '';
    parent.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => parent.on('close', resolve));
    assert.equal(code, 0);
    const childPid = Number(output.trim());
    assert.ok(childPid > 0, `child pid printed: ${output}`);
    await waitFor(() => !isRunning(childPid), 3000, `child ${childPid} to be killed`);
  });
});

describe('runProcess with dieWithParent', { skip: !HAS_SETPRIV && 'needs Linux with util-linux setpriv' }, () => {
  it('a command that cannot run rejects as it would without the wrapper; one that runs is unchanged', async () => {
    await assert.rejects(runProcess('/nonexistent/binary', [], { dieWithParent: true }), (error: NodeJS.ErrnoException) => error.code === 'ENOENT');
    const dir = await mkdtemp(join(tmpdir(), 'convd-subprocess-'));
    try {
      const notExecutable = join(dir, 'script.sh');
      await writeFile(notExecutable, '#!/bin/sh\necho hi\n', { mode: 0o644 });
      if (process.getuid?.() !== 0) {
        await assert.rejects(runProcess(notExecutable, [], { dieWithParent: true }), (error: NodeJS.ErrnoException) => error.code === 'EACCES');
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    const lines: string[] = [];
    const result = await runProcess('sh', ['-c', 'echo out; echo err >&2; exit 127'], { dieWithParent: true, onStdoutLine: (line) => lines.push(line) });
    // A command's own exit 127 stays an exit code: only setpriv's "failed to execute" is a spawn error.
    assert.deepEqual([result.code, lines, result.stderrTail], [127, ['out'], 'err']);
  });

  it('the child dies with its parent even when the parent is killed with SIGKILL', async () => {
    const script = [
      `import { runProcess } from ${JSON.stringify(join(ROOT, 'src/engines/subprocess.ts'))};`,
      `runProcess('sh', ['-c', 'echo $$; exec sleep 30'], { dieWithParent: true, onStdoutLine: (line) => console.log(line) });`,
    ].join('\n');
    const parent = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    const childPid = await new Promise<number>((resolve) => parent.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim()))));
    assert.ok(childPid > 0 && isRunning(childPid));
    try {
      parent.kill('SIGKILL'); // no 'exit' handler runs: only the kernel can end the child now
      await waitFor(() => !isRunning(childPid), 3000, `child ${childPid} to die with its parent`);
    } finally {
      if (isRunning(childPid)) process.kill(childPid, 'SIGKILL');
    }
  });
});

describe('ensureExecutable', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'convd-exec-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('adds the execute bits to a binary unpacked without them', async () => {
    const file = join(dir, 'tool');
    await writeFile(file, '#!/bin/sh\necho ok\n');
    await chmod(file, 0o644);
    const runnable = await ensureExecutable(file, join(dir, 'cache'));
    assert.equal(runnable, file);
    assert.equal((await stat(file)).mode & 0o111, 0o111);
    const result = await runProcess(runnable, [], { onStdoutLine: (line) => assert.equal(line, 'ok') });
    assert.equal(result.code, 0);
  });

  it('copies a binary it may not chmod into a cache, for a user who does not own node_modules', { skip: process.getuid?.() !== 0 && 'needs root to act as another user' }, async (t) => {
    // The other user must be able to read this checkout (a clone under /root may not be).
    const readable = await new Promise<boolean>((resolve) => {
      const probe = spawn('sh', ['-c', 'test -r "$1" && test -x "$2"', 'sh', join(ROOT, 'src/engines/media/binaries.ts'), join(ROOT, 'node_modules/.bin')], { uid: 65534, gid: 65534 });
      probe.on('close', (code) => resolve(code === 0));
      probe.on('error', () => resolve(false));
    });
    if (!readable) {
      t.skip('the checkout is not readable by uid 65534');
      return;
    }
    // As root: a root-owned 0744 file (what `chmod u+x` leaves) is not runnable for uid 65534.
    const file = join(dir, 'rootonly');
    await writeFile(file, '#!/bin/sh\necho copied-ok\n');
    await chmod(file, 0o744);
    await chmod(dir, 0o755);
    const cache = join(dir, 'nobody-cache');
    const script = [
      `import { ensureExecutable } from ${JSON.stringify(join(ROOT, 'src/engines/media/binaries.ts'))};`,
      `const path = await ensureExecutable(${JSON.stringify(file)}, ${JSON.stringify(cache)});`,
      `const { execFileSync } = await import('node:child_process');`,
      `console.log(path + ' ' + execFileSync(path).toString().trim());`,
    ].join('\n');
    await runProcess('mkdir', ['-m', '777', cache]);
    const lines: string[] = [];
    const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
        cwd: ROOT, uid: 65534, gid: 65534, env: { ...process.env, HOME: dir, TSX_TSCONFIG_PATH: join(ROOT, 'tsconfig.json') },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => lines.push(...c.toString().trim().split('\n')));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      child.on('close', (code) => resolve({ code, stderr }));
    });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(lines.at(-1), `${join(cache, 'rootonly')} copied-ok`);
    assert.equal((await stat(file)).mode & 0o777, 0o744, 'the original is left alone');
  });
});
