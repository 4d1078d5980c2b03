/**
 * The engine watches' /proc readings (src/engines/process/proc-readings.ts) on a real tree of
 * processes: a node child that holds 64 MiB and starts a grandchild of its own that holds 32 MiB.
 * The memory limit of an office instance (its bridge and soffice) is judged by the tree's sum, so
 * a reading that missed a descendant would let LibreOffice pass its limit unseen.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { childrenOf, descendantsOf, processCpuMs, processTitle, residentBytes, residentBytesOfTree } from '../../src/engines/process/proc-readings.ts';

const HELD_BYTES = 64 * 1024 * 1024;
const GRANDCHILD_BYTES = 32 * 1024 * 1024;
/** The child: holds HELD_BYTES (touched, so resident), starts a grandchild that holds GRANDCHILD_BYTES, prints its pid, then spins on request until it has used 300 ms of CPU (not of the clock: a loaded machine may give it less). */
const CHILD = `
const held = Buffer.alloc(${HELD_BYTES}, 1);
const grandchild = require('node:child_process').spawn(process.execPath, ['-e', 'const b = Buffer.alloc(${GRANDCHILD_BYTES}, 1); setInterval(() => b[0], 60000)'], { stdio: 'ignore' });
process.stdout.write(grandchild.pid + '\\n');
process.stdin.on('data', () => { const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; }; const end = cpu() + 300; while (cpu() < end); process.stdout.write('spun ' + held[0] + '\\n'); });
`;

describe('/proc readings of a process tree', { skip: process.platform !== 'linux' && 'Linux /proc only' }, () => {
  let child: ChildProcess;
  let grandchild = 0;
  const lines: string[] = [];
  let onLine: () => void = () => undefined;
  const nextLine = () => new Promise<string>((resolve) => {
    if (lines.length > 0) return resolve(lines.shift()!);
    onLine = () => resolve(lines.shift()!);
  });

  before(async () => {
    child = spawn(process.execPath, ['-e', CHILD], { stdio: ['pipe', 'pipe', 'inherit'] });
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      lines.push(...chunk.split('\n').filter(Boolean));
      onLine();
    });
    grandchild = Number(await nextLine());
  });

  after(() => {
    if (grandchild) process.kill(grandchild, 'SIGKILL');
    child.kill('SIGKILL');
  });

  it('finds the children and the grandchildren', () => {
    assert.deepEqual(childrenOf(child.pid!), [grandchild]);
    assert.ok(childrenOf(process.pid).includes(child.pid!));
    const below = descendantsOf(process.pid);
    assert.ok(below.includes(child.pid!) && below.includes(grandchild), `${below.join(' ')} holds ${child.pid} and ${grandchild}`);
    assert.ok(below.indexOf(child.pid!) < below.indexOf(grandchild), 'nearest first');
    assert.deepEqual(descendantsOf(process.pid, 1).includes(grandchild), false);
    assert.match(processTitle(grandchild), /\0-e\0const b = Buffer/);
  });

  it('reads resident memory, of one process and of its tree summed', async () => {
    const own = residentBytes(child.pid!);
    assert.ok(own > HELD_BYTES, `the child holds ${own} bytes, at least ${HELD_BYTES}`);
    // Once the grandchild has touched what it holds.
    for (let tries = 0; tries < 100 && residentBytes(grandchild) < GRANDCHILD_BYTES; tries++) await new Promise((resolve) => setTimeout(resolve, 50));
    const theirs = residentBytes(grandchild);
    assert.ok(theirs > GRANDCHILD_BYTES, `the grandchild holds ${theirs} bytes, at least ${GRANDCHILD_BYTES}`);
    const tree = residentBytesOfTree(child.pid!);
    // Read one after the other: the child's own may move by a little between the readings.
    assert.ok(Math.abs(tree - (own + theirs)) < 4 * 1024 * 1024, `tree ${tree} against ${own} + ${theirs}`);
    assert.equal(residentBytesOfTree(child.pid!, 0), residentBytes(child.pid!));
  });

  it('reads processor time as it is used', async () => {
    const used = processCpuMs(child.pid!);
    assert.equal(typeof used, 'number');
    child.stdin!.write('spin\n');
    assert.match(await nextLine(), /^spun 1$/);
    const spent = processCpuMs(child.pid!)! - used!;
    // /proc counts in ticks of 10 ms, which the kernel may take by sampling.
    assert.ok(spent >= 200, `300 ms of the child's CPU read as ${spent} ms`);
  });

  it('says nothing of a process that is gone', async () => {
    const gone = spawn('true');
    await new Promise((resolve) => gone.once('exit', resolve));
    assert.equal(residentBytes(gone.pid!), 0);
    assert.equal(residentBytesOfTree(gone.pid!), 0);
    assert.deepEqual(childrenOf(gone.pid!), []);
    assert.equal(processTitle(gone.pid!), '');
    assert.equal(processCpuMs(gone.pid!), undefined);
  });
});
