/**
 * A run's directory: the input under the user's name beside the output's path (an `out/` of its
 * own only where source and target share an extension); given back, it is kept for the next run
 * only when emptied of what the run made, and removed whole where an engine left more in it.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { prepareJobFiles, RunDirs } from '../../src/service/job-dir.ts';

describe('run directories', () => {
  let root: string;
  let stored: string;
  let made = 0;
  const newDir = async () => {
    const dir = join(root, `run-${++made}`);
    await mkdir(dir, { mode: 0o700 });
    return dir;
  };
  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'convd-jobdir-'));
    stored = join(root, 'cnv_stored');
    await writeFile(stored, 'the input bytes');
  });
  after(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('puts the output beside the input when the extensions differ; the emptied directory serves the next run', async () => {
    const dirs = new RunDirs(newDir);
    const dir = await dirs.take();
    const files = await prepareJobFiles(dir, stored, 'Holiday photo.PNG', 'png', 'webp');
    assert.equal(files.inputPath, join(dir, 'Holiday photo.png'));
    assert.equal(files.outputPath, join(dir, 'Holiday photo.webp'));
    assert.equal(files.outputDir, undefined);
    assert.deepEqual(await readdir(dir), ['Holiday photo.png'], 'no directory more than the run needs');
    assert.equal(await readFile(files.inputPath, 'utf8'), 'the input bytes');
    await writeFile(files.outputPath, 'the result');
    await rm(files.outputPath); // adopted as the result: moved away
    await dirs.give(dir, files);
    assert.deepEqual(await readdir(dir), [], 'emptied');
    assert.equal(existsSync(stored), true, 'the stored input stays');
    assert.equal(await dirs.take(), dir, 'kept for the next run');
    assert.notEqual(await dirs.take(), dir, 'and given to one run at a time');
  });

  it('gives the output a directory of its own when source and target share an extension', async () => {
    const dirs = new RunDirs(newDir);
    const dir = await dirs.take();
    const files = await prepareJobFiles(dir, stored, 'report.pdf', 'pdf', 'pdf');
    assert.equal(files.outputPath, join(dir, 'out', 'report.pdf'));
    assert.equal(files.outputDir, join(dir, 'out'));
    assert.notEqual(files.inputPath, files.outputPath);
    await dirs.give(dir, files);
    assert.deepEqual(await readdir(dir), []);
    assert.equal(await dirs.take(), dir);
  });

  it('removes a directory an engine left more in (a scratch folder, an output never adopted), and never hands it out again', async () => {
    const dirs = new RunDirs(newDir);
    const dir = await dirs.take();
    const files = await prepareJobFiles(dir, stored, 'deck.odp', 'odp', 'pdf');
    await mkdir(join(dir, 'pages-x'));
    await writeFile(join(dir, 'pages-x', 'page-1.png'), 'x');
    await dirs.give(dir, files);
    assert.equal(existsSync(dir), false);
    const other = await dirs.take();
    const second = await prepareJobFiles(other, stored, 'deck.odp', 'odp', 'pdf');
    await writeFile(second.outputPath, 'half a result');
    await dirs.give(other, second);
    assert.equal(existsSync(other), false);
    assert.notEqual(await dirs.take(), other);
  });

  it('removes a directory whose files were never made, and keeps no more than it may', async () => {
    const dirs = new RunDirs(newDir, 1);
    const dir = await dirs.take();
    await writeFile(join(dir, 'partial'), 'x');
    await dirs.give(dir);
    assert.equal(existsSync(dir), false);
    const [first, second] = [await dirs.take(), await dirs.take()];
    const [a, b] = [await prepareJobFiles(first, stored, 'a.png', 'png', 'gif'), await prepareJobFiles(second, stored, 'b.png', 'png', 'gif')];
    await dirs.give(first, a);
    await dirs.give(second, b);
    assert.equal(existsSync(first), true, 'one kept');
    assert.equal(existsSync(second), false, 'the one past the limit removed');
  });
});
