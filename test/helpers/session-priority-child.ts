/**
 * Run by engines/session-priority.test.ts as an unprivileged user: starts STARTED engine
 * processes at once, through runProcess (`processes`; `long`: each runs past LONG_RUN_MS) or
 * through the HTML engine's browser wrapper with a stand-in for Chromium (`wrapper`), and prints
 * each one's autogroup line (or `none`), one per line.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { wrapperScript } from '../../src/engines/html/launch.ts';
import { ENGINE_NICENESS, findParentDeathWrapper, LONG_RUN_MS, LONG_RUN_NICENESS } from '../../src/engines/process/group.ts';
import { runProcess } from '../../src/engines/subprocess.ts';

const STARTED = 6;
/** Each process reads its autogroup once it is at `nice`, or after 5 s. */
const report = (nice: number) => `for i in $(seq 1 100); do grep -q " nice ${nice}$" /proc/$$/autogroup 2>/dev/null && break; sleep 0.05; done; cat /proc/$$/autogroup 2>/dev/null || echo none`;

async function throughRunProcess(long: boolean): Promise<string[]> {
  const script = long ? `sleep ${LONG_RUN_MS / 1000}; ${report(LONG_RUN_NICENESS)}` : report(ENGINE_NICENESS);
  return Promise.all(Array.from({ length: STARTED }, async () => {
    const lines: string[] = [];
    await runProcess('sh', ['-c', script], { niceness: ENGINE_NICENESS, onStdoutLine: (line) => lines.push(line) });
    return lines[0] ?? 'no output';
  }));
}

/** Started as Playwright starts the browser: detached (a session of its own), the wrapper as the executable. */
async function throughWrapper(): Promise<string[]> {
  const dir = await mkdtemp(join(tmpdir(), 'convd-session-priority-'));
  try {
    const standIn = join(dir, 'chromium');
    // The wrapper lowers its session before it execs the browser: the stand-in reads it at once.
    await writeFile(standIn, '#!/bin/sh\ncat /proc/self/autogroup 2>/dev/null || echo none\n', { mode: 0o755 });
    const wrapper = join(dir, 'wrapper');
    const paths = { executable: standIn, pidFile: join(dir, 'pid'), preferences: join(dir, 'Preferences'), ownDirs: [] };
    await writeFile(wrapper, wrapperScript(paths, await findParentDeathWrapper(), { on: false, why: 'a test' }), { mode: 0o700 });
    return await Promise.all(Array.from({ length: STARTED }, () => new Promise<string>((resolve, reject) => {
      const child = spawn(wrapper, [], { detached: true, stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
      child.on('error', reject);
      child.on('close', () => resolve(out.trim() || 'no output'));
    })));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const mode = process.argv[2];
const lines = mode === 'wrapper' ? await throughWrapper() : await throughRunProcess(mode === 'long');
process.stdout.write(`${lines.join('\n')}\n`);
