/**
 * cli/save.ts, the one place results reach the user's disk: an in-process result (a file handed
 * over by the client) is renamed into place, keeping its inode; into a set-group-ID directory or
 * from another file system it is copied; a streamed result lands whole or not at all.
 */
import assert from 'node:assert/strict';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import type { DownloadResult } from '../../src/client/types.ts';
import { saveDownload } from '../../cli/save.ts';

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'conv-save-test-'));
});
after(() => rm(dir, { recursive: true, force: true }));

async function handedOver(name: string, bytes: Buffer): Promise<DownloadResult & { localPath: string }> {
  const localPath = join(dir, `result-${name}`);
  await writeFile(localPath, bytes);
  return {
    get stream(): Readable {
      throw new Error('an in-process result is never streamed to a file');
    },
    filename: name,
    size: bytes.length,
    localPath,
  };
}

describe('saveDownload', () => {
  it('renames an in-process result into place: the same file, nothing copied, nothing left beside it', async () => {
    const out = join(dir, 'plain');
    await mkdir(out);
    const result = await handedOver('a.webp', Buffer.from('webp bytes'));
    const inode = (await stat(result.localPath)).ino;
    const written = await saveDownload(result, { kind: 'dir', path: out }, process.stdout);
    assert.equal(written, join(out, 'a.webp'));
    assert.equal((await stat(written)).ino, inode);
    assert.deepEqual(await readdir(out), ['a.webp']);
    await assert.rejects(stat(result.localPath), { code: 'ENOENT' });
  });

  it('replaces an existing file of that name, as before', async () => {
    const out = join(dir, 'existing');
    await mkdir(out);
    await writeFile(join(out, 'b.png'), 'old');
    await saveDownload(await handedOver('b.png', Buffer.from('new')), { kind: 'dir', path: out }, process.stdout);
    assert.equal(await readFile(join(out, 'b.png'), 'utf8'), 'new');
    assert.deepEqual(await readdir(out), ['b.png']);
  });

  it('copies into a set-group-ID directory, so the file takes the group a file made there gets', async () => {
    const out = join(dir, 'shared');
    await mkdir(out);
    await chmod(out, 0o2775);
    const result = await handedOver('c.jpg', Buffer.from('jpeg bytes'));
    const inode = (await stat(result.localPath)).ino;
    const written = await saveDownload(result, { kind: 'file', path: join(out, 'named.jpg') }, process.stdout);
    assert.notEqual((await stat(written!)).ino, inode);
    assert.equal(await readFile(written!, 'utf8'), 'jpeg bytes');
    assert.deepEqual(await readdir(out), ['named.jpg']);
  });

  it('writes a streamed result whole or not at all', async () => {
    const out = join(dir, 'streamed');
    await mkdir(out);
    const complete: DownloadResult = { stream: Readable.from([Buffer.from('abc'), Buffer.from('def')]), filename: 'd.txt', size: 6 };
    await saveDownload(complete, { kind: 'dir', path: out }, process.stdout);
    assert.equal(await readFile(join(out, 'd.txt'), 'utf8'), 'abcdef');
    const cut = new PassThrough();
    cut.end(Buffer.from('abc'));
    await assert.rejects(saveDownload({ stream: cut, filename: 'e.txt', size: 6 }, { kind: 'dir', path: out }, process.stdout), /received 3 of 6 bytes/);
    assert.deepEqual(await readdir(out), ['d.txt']);
  });
});
