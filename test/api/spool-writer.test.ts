/**
 * An upload's spool file (SpoolWriter): every chunk lands in order, chunks that arrive during a
 * write go out together, a client faster than the disk is paused and resumed, and a file that
 * cannot be written is reported once the descriptor is closed, never as an unhandled rejection.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { SpoolWriter } from '../../daemon/http/spool-writer.ts';

describe('the spool writer', () => {
  let dir = '';
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'convd-spool-writer-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('writes every chunk in order, mode 0600', async () => {
    const path = join(dir, 'whole');
    const chunks = Array.from({ length: 40 }, (_, index) => randomBytes(1000 + index * 997));
    const writer = new SpoolWriter(path, { pause: () => undefined, resume: () => undefined });
    for (const chunk of chunks) assert.equal(writer.push(chunk), true);
    await writer.end();
    assert.deepEqual(await readFile(path), Buffer.concat(chunks));
    assert.equal((await stat(path)).mode & 0o777, 0o600);
  });

  it('pauses its source past 1 MiB waiting and resumes it once that is written', async () => {
    const path = join(dir, 'paced');
    const flow: string[] = [];
    let resumed: (() => void) | null = null;
    let paused = false;
    const writer = new SpoolWriter(path, {
      pause: () => {
        paused = true;
        flow.push('pause');
      },
      resume: () => {
        paused = false;
        flow.push('resume');
        resumed?.();
      },
    });
    const chunks = Array.from({ length: 48 }, () => randomBytes(64 * 1024));
    // As a fast client's bytes arrive: pushed until the writer says pause, then after its resume.
    for (const chunk of chunks) {
      if (paused) await new Promise<void>((resolve) => (resumed = resolve));
      writer.push(chunk);
    }
    await writer.end();
    assert.ok(flow.includes('pause') && flow.includes('resume'), `paused and resumed: ${flow.join(',')}`);
    assert.deepEqual(await readFile(path), Buffer.concat(chunks));
  });

  it('a write that fails while the source is paused resumes it, so that its owner learns of the failure', { skip: process.platform !== 'linux' && 'writes to /dev/full', timeout: 10_000 }, async () => {
    const flow: string[] = [];
    let resumed: (() => void) | null = null;
    // Every write to /dev/full fails with ENOSPC: a full disk.
    const writer = new SpoolWriter('/dev/full', {
      pause: () => flow.push('pause'),
      resume: () => {
        flow.push('resume');
        resumed?.();
      },
    });
    for (let index = 0; index < 24; index++) writer.push(randomBytes(64 * 1024));
    assert.deepEqual(flow, ['pause'], 'paused once, past 1 MiB waiting');
    await new Promise<void>((resolve) => (resumed = resolve));
    assert.equal(writer.push(randomBytes(10)), false, 'the next chunk is refused');
    await assert.rejects(writer.end(), { code: 'ENOSPC' });
  });

  it('reports a file it cannot create at its end, and refuses more chunks', async () => {
    const writer = new SpoolWriter(join(dir, 'no-such-dir', 'file'), { pause: () => undefined, resume: () => undefined });
    writer.push(Buffer.from('first'));
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(writer.push(Buffer.from('second')), false);
    await assert.rejects(writer.end(), { code: 'ENOENT' });
  });

  it('discards: closes without writing what waits, and without an error', async () => {
    const writer = new SpoolWriter(join(dir, 'no-such-dir', 'other'), { pause: () => undefined, resume: () => undefined });
    writer.push(Buffer.from('bytes'));
    await writer.end(true);
  });
});
