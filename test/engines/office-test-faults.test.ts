/**
 * The office tests' injected crash (bridge.py's CONVD_TEST_CRASH_* faults) ends as a crash even
 * when soffice's own crash handler hangs instead of ending it: a soffice that does not die of
 * its SIGABRT is killed after TEST_ABORT_WAIT_S and counted as the crash it was made to be (CI
 * once waited 40 minutes on one). Stood in for here by a process that ignores SIGABRT. And a UNO
 * call that fails as its soffice is killed ends the instance even when the process could not be
 * reaped yet at the failure (its connection closes first): stood in for by a process that kills
 * itself a moment after.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { findOffice } from '../../src/engines/office/find-office.ts';
import { findParentDeathWrapper } from '../../src/engines/process/group.ts';

const run = promisify(execFile);
const OFFICE_DIR = fileURLToPath(new URL('../../src/engines/office/', import.meta.url));
const office = await findOffice(process.env);
const skip = office.ready ? false : `LibreOffice's Python is not here: ${office.ready ? '' : office.problem}`;

/** A child that outlives a SIGABRT, as a soffice whose crash handler hangs; says when it is ready to. */
const STUBBORN = 'import signal, time; signal.signal(signal.SIGABRT, signal.SIG_IGN); print("ready", flush=True); time.sleep(60)';

describe('a call that fails as its soffice is killed', { skip }, () => {
  /**
   * Runs `end_if_office_died` on `error` (Python) beside a stand-in soffice running `child`, once the
   * child says it is ready (its own clock starts there, not while Python starts).
   */
  const endIfDied = (child: string, error = 'uno.getClass("com.sun.star.uno.RuntimeException")("illegal object given!", None)') => run(office.ready ? office.python : 'python3', ['-c', [
    'import subprocess, sys, uno, bridge',
    'bridge.PHASE = "converting"',
    `office = subprocess.Popen([sys.executable, "-c", ${JSON.stringify(`print("ready", flush=True); ${child}`)}], stdout=subprocess.PIPE)`,
    `error = ${error}`,
    'office.stdout.readline()',
    'bridge.end_if_office_died(office, error)',
    'print("answered", office.poll())',
    'office.kill()',
  ].join('\n')], { cwd: OFFICE_DIR, timeout: 30_000 }).then(
    ({ stdout }) => ({ code: 0, stdout, stderr: '' }),
    (error: { code?: number; stdout?: string; stderr?: string }) => ({ code: error.code, stdout: error.stdout ?? '', stderr: error.stderr ?? '' }),
  );

  it('before it can be reaped (its connection closes first): the instance ends, no error answer', async () => {
    // Killed a moment after the call failed, as a kill -9 whose sockets closed before the process was reapable.
    const exit = await endIfDied('import os, signal, time; time.sleep(0.2); os.kill(os.getpid(), signal.SIGKILL)');
    assert.equal(exit.code, 1, `${exit.stdout} ${exit.stderr}`);
    assert.match(exit.stderr, /soffice exited \(-9\) while converting/);
    assert.equal(exit.stdout, '');
  });

  it('while soffice lives on: the error is answered after a moment', async () => {
    const started = performance.now();
    const exit = await endIfDied('import time; time.sleep(30)');
    assert.equal(exit.code, 0, exit.stderr);
    assert.equal(exit.stdout.trim(), 'answered None');
    assert.ok(performance.now() - started < 10_000);
  });

  it('a filter\'s own failure (a subclass of RuntimeException) is answered without the wait', async () => {
    // Killed 0.2 s after: were the error taken for a broken connection, the wait would see it gone.
    const exit = await endIfDied('import os, signal, time; time.sleep(0.2); os.kill(os.getpid(), signal.SIGKILL)', 'uno.getClass("com.sun.star.lang.WrappedTargetRuntimeException")("the filter failed", None, None)');
    assert.equal(exit.code, 0, exit.stderr);
    assert.equal(exit.stdout.trim(), 'answered None');
  });
});

describe('the office tests\' injected crash', { skip }, () => {
  it('in the second way: a soffice that outlives its SIGABRT is killed and reported as aborted', async () => {
    const script = [
      'import subprocess, sys, time, bridge',
      'bridge.TEST_ABORT_WAIT_S = 1',
      `child = subprocess.Popen([sys.executable, "-c", ${JSON.stringify(STUBBORN)}], stdout=subprocess.PIPE)`,
      'child.stdout.readline()',
      'started = time.monotonic()',
      'code = bridge.aborted_for_tests(child)',
      'print(code, bridge.crashed(code), round(time.monotonic() - started, 1), child.poll() is not None)',
    ].join('\n');
    const { stdout } = await run(office.ready ? office.python : 'python3', ['-c', script], { cwd: OFFICE_DIR, timeout: 30_000 });
    const [code, crashed, seconds, ended] = stdout.trim().split(' ');
    assert.equal(code, '-6');
    assert.equal(crashed, 'True');
    assert.ok(Number(seconds) >= 1 && Number(seconds) < 10, stdout);
    assert.equal(ended, 'True', 'the stubborn child is gone');
  });

  it('in an instance: the bridge ends as crashed on the document, not waiting forever', async () => {
    const script = [
      'import subprocess, sys, bridge',
      'bridge.TEST_ABORT_WAIT_S = 1',
      `bridge.OFFICE = subprocess.Popen([sys.executable, "-c", ${JSON.stringify(STUBBORN)}], stdout=subprocess.PIPE)`,
      'bridge.OFFICE.stdout.readline()',
      'bridge.PHASE = "loading"',
      'bridge.watch_office(bridge.OFFICE)',
      'bridge.crash_for_tests("crash-here", {"input": "/nowhere/crash-here.docx"})',
    ].join('\n');
    const started = performance.now();
    const exit = await run(office.ready ? office.python : 'python3', ['-c', script], { cwd: OFFICE_DIR, timeout: 30_000 }).then(
      () => ({ code: 0, stderr: '' }),
      (error: { code?: number; stderr?: string }) => ({ code: error.code, stderr: error.stderr ?? '' }),
    );
    assert.equal(exit.code, 3, `CRASHED_ON_DOCUMENT: ${exit.stderr}`);
    assert.match(exit.stderr, /soffice crashed .* while opening the document/);
    assert.ok(performance.now() - started < 15_000);
  });
});

describe('a soffice start that dies of a signal', { skip }, () => {
  /**
   * launch_office on a stand-in for soffice.bin that aborts (SIGABRT) in its first `aborts`
   * starts and runs the real soffice.bin after; prints how many starts it took, and stops the
   * instance it got.
   */
  const launch = async (aborts: number) => {
    // As convd starts it: under the parent-death wrapper where there is one.
    const wrapper = await findParentDeathWrapper();
    const dir = await mkdtemp(join(tmpdir(), 'convd-start-'));
    try {
      const standIn = join(dir, 'soffice.bin');
      const starts = join(dir, 'starts');
      await writeFile(standIn, [
        '#!/bin/sh',
        `echo start >> '${starts}'`,
        // No core file of the stand-in's abort (it runs in the source tree).
        'ulimit -c 0',
        `if [ "$(wc -l < '${starts}')" -le ${aborts} ]; then kill -ABRT $$; fi`,
        `exec '${office.ready ? office.sofficeBin : ''}' "$@"`,
      ].join('\n'), { mode: 0o700 });
      const exit = await run(office.ready ? office.python : 'python3', ['-c', [
        'import sys, bridge',
        'try:',
        `    office, desktop = bridge.start_office(${JSON.stringify(standIn)}, ${JSON.stringify(join(dir, 'profile'))}, ${wrapper ? JSON.stringify(wrapper) : 'None'})`,
        '    bridge.stop_office(office, desktop)',
        '    print("started")',
        'except RuntimeError as error:',
        '    print(error)',
      ].join('\n')], { cwd: OFFICE_DIR, timeout: 120_000 });
      const count = (await readFile(starts, 'utf8')).trim().split('\n').length;
      return { said: exit.stdout.trim(), starts: count };
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  };

  it('in its first start is started once more, and comes up', async () => {
    const { said, starts } = await launch(1);
    assert.equal(said, 'started');
    // The abort, then the start that came up (a fresh profile's is two: the first asks for a restart, 81).
    assert.ok(starts >= 2, `${starts} starts`);
  });

  it('twice fails, after one more start only', async () => {
    assert.deepEqual(await launch(5), { said: 'soffice exited with -6 before it accepted a connection (its start made once more)', starts: 2 });
  });
});

describe('soffice\'s temporary files', { skip }, () => {
  it('are kept in its profile, so a killed instance leaves nothing of them in the temp dir', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'convd-temp-'));
    try {
      const profile = join(dir, 'profile');
      // LibreOffice names its directory lu<pid>...tmp; read at once, then soffice is killed (-9).
      const { stdout } = await run(office.ready ? office.python : 'python3', ['-c', [
        'import glob, json, os, bridge',
        `office, desktop = bridge.start_office(${JSON.stringify(office.ready ? office.sofficeBin : '')}, ${JSON.stringify(profile)}, None)`,
        'found = lambda where: sorted(glob.glob(os.path.join(where, "lu%d*.tmp" % office.pid)))',
        'print(json.dumps({"inProfile": len(found(os.path.join(' + JSON.stringify(profile) + ', "tmp"))), "pid": office.pid}))',
        'office.kill()',
        'office.wait()',
      ].join('\n')], { cwd: OFFICE_DIR, timeout: 120_000 });
      const { inProfile, pid } = JSON.parse(stdout.trim()) as { inProfile: number; pid: number };
      assert.equal(inProfile, 1, 'its directory is in the profile');
      const left = (await readdir(tmpdir())).filter((name) => name.startsWith(`lu${pid}`) && name.endsWith('.tmp'));
      assert.deepEqual(left, [], 'nothing of the killed instance in the temp dir');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
