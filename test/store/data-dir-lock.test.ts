/** One writer per data dir: a live owner is refused, a dead one's lock (a zombie's too) is taken over. */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { acquireDataDirLock, DataDirLockedError } from '../../src/store/data-dir-lock.ts';

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'convd-lock-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

/**
 * A shell whose child `sleep 0` has ended but is never reaped (the shell execs `sleep`, which
 * waits for nothing): the child stays a zombie, as a daemon killed -9 does until its parent
 * reaps it. Resolves with both pids once the zombie exists.
 */
async function zombie(): Promise<{ zombie: number; parent: number; stop: () => void }> {
  const shell = spawn('sh', ['-c', 'sleep 0 & echo $!; exec sleep 5'], { stdio: ['ignore', 'pipe', 'ignore'] });
  const pid = await new Promise<number>((resolve) => shell.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim()))));
  for (let i = 0; i < 100; i++) {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    if (stat.slice(stat.lastIndexOf(')') + 2)[0] === 'Z') break;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return { zombie: pid, parent: shell.pid!, stop: () => shell.kill('SIGKILL') };
}

describe('data dir lock', () => {
  it('refuses while the owner lives, takes over from a zombie', { skip: process.platform !== 'linux' }, async () => {
    const held = await zombie();
    try {
      await writeFile(join(dir, 'convd.lock'), String(held.parent));
      await assert.rejects(acquireDataDirLock(dir), (error) => error instanceof DataDirLockedError && error.pid === held.parent);
      await writeFile(join(dir, 'convd.lock'), String(held.zombie));
      const release = await acquireDataDirLock(dir);
      assert.equal((await readFile(join(dir, 'convd.lock'), 'utf8')).trim(), String(process.pid));
      await release();
    } finally {
      held.stop();
    }
  });
});
