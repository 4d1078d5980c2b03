import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { cleanEnv, spawnConv, tempDir } from '../helpers/cli-helpers.ts';

/** With no server configured, `convert` and `formats` run in-process (the real binary, no daemon). */

let dir: { path: string; remove: () => Promise<void> };
let env: NodeJS.ProcessEnv;

before(async () => {
  dir = await tempDir('conv-local-test-');
  env = cleanEnv({ HOME: dir.path, XDG_CONFIG_HOME: join(dir.path, 'config') });
  await writeFile(join(dir.path, 'green.png'), await sharp({ create: { width: 24, height: 16, channels: 3, background: '#00ff00' } }).png().toBuffer());
});
after(() => dir.remove());

const conv = (args: string[], stdin?: Buffer) => spawnConv(args, { env, cwd: dir.path, stdin });

describe('in-process conv', () => {
  it('convert writes the result into the current directory when no -o is given', async () => {
    const result = await conv(['convert', 'green.png', '--to', 'webp', '-O', 'quality=70', '--json']);
    assert.equal(result.code, 0, result.stderr);
    const conversion = JSON.parse(result.stdout) as { status: string; options: { quality: number }; path: string; result: Record<string, unknown>; links?: unknown };
    assert.equal(conversion.status, 'succeeded');
    assert.equal(conversion.options.quality, 70);
    // Where the file went, and nothing that points at a server there is none of.
    assert.equal(conversion.path, join(dir.path, 'green.webp'));
    assert.doesNotMatch(result.stdout, /local:/);
    assert.equal(conversion.links, undefined);
    assert.deepEqual(Object.keys(conversion.result).sort(), ['filename', 'mime', 'size']);
    const image = await sharp(conversion.path).metadata();
    assert.deepEqual([image.format, image.width, image.height], ['webp', 24, 16]);
    assert.ok(!(await readdir(dir.path)).some((name) => name.endsWith('.part')));
  });

  it('convert - -o - pipes a real image through', async () => {
    const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#123456' } }).png().toBuffer();
    const result = await conv(['convert', '-', '--from', 'png', '--to', 'tiff', '-o', '-'], png);
    assert.equal(result.code, 0, result.stderr);
    assert.equal((await sharp(result.stdoutBytes).metadata()).format, 'tiff');
  });

  it('a broken input fails with exit 5; bad options with exit 2', async () => {
    await writeFile(join(dir.path, 'broken.png'), 'nope');
    const broken = await conv(['convert', 'broken.png', '--to', 'webp']);
    assert.equal(broken.code, 5);
    assert.match(broken.stderr, /^error: input_invalid: broken\.png: /);
    const options = await conv(['convert', 'green.png', '--to', 'png', '-O', 'quality=50']);
    assert.equal(options.code, 2);
    assert.match(options.stderr, /-O quality: is not an option of this conversion/);
  });

  it('convert -j 3 runs three conversions at once in-process (not capped at the core count)', async () => {
    // Noise encodes slowly (about a quarter of a second each here), so runs that overlap show it.
    const noise = await sharp({ create: { width: 1200, height: 1200, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 40 } } })
      .png({ compressionLevel: 1 }).toBuffer();
    const names = ['noise-1.png', 'noise-2.png', 'noise-3.png'];
    await Promise.all(names.map((name) => writeFile(join(dir.path, name), noise)));
    // On one core: the old pool (one worker per core) would run them one after another anywhere.
    const result = await spawnConv(['convert', ...names, '--to', 'webp', '-j', '3', '-o', 'noise-out/', '--json'], { env, cwd: dir.path, onOneCpu: true });
    assert.equal(result.code, 0, result.stderr);
    const conversions = JSON.parse(result.stdout) as { status: string; started_at: string; finished_at: string }[];
    assert.deepEqual(conversions.map((c) => c.status), ['succeeded', 'succeeded', 'succeeded']);
    const lastStart = Math.max(...conversions.map((c) => Date.parse(c.started_at)));
    const firstEnd = Math.min(...conversions.map((c) => Date.parse(c.finished_at)));
    assert.ok(lastStart < firstEnd, `the third started (${lastStart}) after the first ended (${firstEnd})`);
    for (const name of names) {
      const image = await sharp(join(dir.path, 'noise-out', name.replace('.png', '.webp'))).metadata();
      assert.deepEqual([image.format, image.width], ['webp', 1200]);
    }
  });

  it('takes file inputs without changing them (a hard link, not a copy); a relative symlink converts too', async () => {
    const source = join(dir.path, 'kept.png');
    await writeFile(source, await sharp({ create: { width: 30, height: 20, channels: 3, background: '#ff8800' } }).png().toBuffer());
    const before = await stat(source);
    const bytes = await readFile(source);
    await mkdir(join(dir.path, 'links'), { recursive: true });
    // Linked itself, the symlink would point elsewhere from the service's folder: it is copied.
    await symlink('../kept.png', join(dir.path, 'links', 'via-link.png'));
    const result = await conv(['convert', 'kept.png', 'links/via-link.png', '--to', 'webp', '-o', 'kept-out/']);
    assert.equal(result.code, 0, result.stderr);
    for (const name of ['kept.webp', 'via-link.webp']) {
      const image = await sharp(join(dir.path, 'kept-out', name)).metadata();
      assert.deepEqual([image.format, image.width, image.height], ['webp', 30, 20], name);
    }
    const after = await stat(source);
    assert.deepEqual([after.nlink, after.mode, after.size, after.ino], [before.nlink, before.mode, before.size, before.ino]);
    assert.deepEqual(await readFile(source), bytes);
  });

  it('moves each result into place, nothing left beside it; from and to another file system it copies', async (t) => {
    const result = await conv(['convert', 'green.png', '--to', 'jpg', '-o', 'moved-out/']);
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(await readdir(join(dir.path, 'moved-out')), ['green.jpg']);
    assert.equal((await sharp(join(dir.path, 'moved-out', 'green.jpg')).metadata()).format, 'jpeg');

    // /dev/shm is a tmpfs where the temp dir (the service's files) is on disk: no link, no rename.
    const shm = await stat('/dev/shm').catch(() => null);
    if (!shm?.isDirectory() || shm.dev === (await stat(tmpdir())).dev) {
      t.diagnostic('no second file system at /dev/shm: the copying path is not exercised');
      return;
    }
    const other = await mkdtemp('/dev/shm/conv-local-test-');
    try {
      await writeFile(join(other, 'far.png'), await readFile(join(dir.path, 'green.png')));
      const far = await conv(['convert', join(other, 'far.png'), '--to', 'webp', '-o', `${other}/`]);
      assert.equal(far.code, 0, far.stderr);
      assert.deepEqual((await readdir(other)).sort(), ['far.png', 'far.webp']);
      const image = await sharp(join(other, 'far.webp')).metadata();
      assert.deepEqual([image.format, image.width, image.height], ['webp', 24, 16]);
    } finally {
      await rm(other, { recursive: true, force: true });
    }
  });

  it('formats lists what this machine converts', async () => {
    const listing = await conv(['formats', '--json']);
    assert.equal(listing.code, 0, listing.stderr);
    const png = (JSON.parse(listing.stdout) as { data: { source: string; targets: string[] }[] }).data.find((entry) => entry.source === 'png');
    assert.ok(png?.targets.includes('webp'));
    const details = await conv(['formats', 'png']);
    assert.match(details.stdout, /^png →\nTARGET\s+CREDITS\s+MAX MB\s+OPTIONS/);
  });
});
