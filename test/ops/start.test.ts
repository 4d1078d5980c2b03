/**
 * A start with nothing changed is quick: `npm run build` compiles only when a
 * source, a setting or the compiler changed (scripts/build.mjs), and the daemon keeps its
 * engines' probe findings in its data dir, so a second start probes nothing (pandoc alone ran 33
 * times at every start), each engine loading with its first conversion instead.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { appendFileSync, chmodSync, cpSync, existsSync, readFileSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { findPandoc } from '../../src/engines/markup/pandoc.ts';
import { api, ROOT, startDaemon, type DaemonHandle } from '../helpers/daemon.ts';

describe('npm run build compiles only what changed', () => {
  let copy: string;

  before(async () => {
    copy = await mkdtemp(join(tmpdir(), 'convd-build-'));
    // The checkout as `npm test` left it, dist/ included (timestamps kept, so its fingerprint holds):
    // a build from nothing is what the fresh-clone test (quick-start-clone) does, at full length.
    for (const entry of ['src', 'daemon', 'cli', 'scripts', 'dist', 'tsconfig.json', 'tsconfig.build.json', 'package.json', 'package-lock.json']) {
      cpSync(join(ROOT, entry), join(copy, entry), { recursive: true, preserveTimestamps: true });
    }
    symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'));
  });

  after(async () => {
    if (copy) await rm(copy, { recursive: true, force: true });
  });

  /** Runs the build; true when it compiled (it says so on stderr). */
  const build = (): boolean => {
    const result = spawnSync(process.execPath, [join(copy, 'scripts', 'build.mjs')], { cwd: copy, encoding: 'utf8' });
    assert.equal(result.status, 0, `build failed: ${result.stdout}${result.stderr}`);
    return /build: compiling/.test(result.stderr);
  };
  const mtime = (path: string) => statSync(join(copy, path)).mtimeMs;

  it('leaves an unchanged checkout alone, rebuilds after an edit', () => {
    // npm test built this checkout, so this is a no-op there (run alone on a stale dist/, it builds).
    build();
    for (const output of ['dist/daemon/main.js', 'dist/cli/main.js', 'dist/src/engines/office/bridge.py', 'dist/.build-fingerprint']) {
      assert.ok(existsSync(join(copy, output)), `${output} built`);
    }
    const fingerprint = readFileSync(join(copy, 'dist/.build-fingerprint'), 'utf8');
    const mainBuilt = mtime('dist/daemon/main.js');
    const infoBuilt = mtime('dist/.tsbuildinfo');

    assert.equal(build(), false, 'nothing changed: nothing compiled');
    assert.equal(mtime('dist/daemon/main.js'), mainBuilt, 'nothing changed: nothing written');
    assert.equal(mtime('dist/.tsbuildinfo'), infoBuilt, 'nothing changed: tsc did not run');

    appendFileSync(join(copy, 'daemon', 'main.ts'), '\n// an edit\n');
    // A clock with a coarse resolution must still see the edit as newer.
    const later = new Date(Date.now() + 5000);
    utimesSync(join(copy, 'daemon', 'main.ts'), later, later);
    assert.ok(build(), 'an edited source is compiled');
    assert.notEqual(readFileSync(join(copy, 'dist/.build-fingerprint'), 'utf8'), fingerprint, 'a new fingerprint');
    assert.ok(mtime('dist/daemon/main.js') > mainBuilt, 'the edited file compiled again');
    assert.match(readFileSync(join(copy, 'dist/daemon/main.js'), 'utf8'), /an edit/);
  });
});

const pandoc = await findPandoc(process.env);
const required = process.env.CI === 'true';
const skip = pandoc || required ? false : 'pandoc is not installed here';

describe('a second start probes no engine', { skip }, () => {
  let dir: string;
  let daemon: DaemonHandle | undefined;
  let wrapper: string;
  let calls: string;

  before(async () => {
    assert.ok(pandoc, 'pandoc is required under CI');
    dir = await mkdtemp(join(tmpdir(), 'convd-start-'));
    // pandoc behind a script that counts its runs.
    calls = join(dir, 'pandoc-calls.log');
    wrapper = join(dir, 'pandoc');
    writeFileSync(wrapper, `#!/bin/sh\necho run >> '${calls}'\nexec '${pandoc.path}' "$@"\n`);
    chmodSync(wrapper, 0o755);
  });

  after(async () => {
    await daemon?.dispose();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const runs = () => (existsSync(calls) ? readFileSync(calls, 'utf8').split('\n').filter(Boolean).length : 0);
  const env = () => ({ CONVD_PANDOC_PATH: wrapper });

  it('keeps the findings in the data dir, loads pandoc with its first conversion, probes again when pandoc changes', async () => {
    daemon = await startDaemon({ env: env() });
    assert.ok(runs() > 0, 'the first start probes pandoc');
    assert.ok(existsSync(join(daemon.dataDir, 'cache', 'engines.json')), 'and keeps what it found');
    await daemon.stop();

    writeFileSync(calls, '');
    daemon = await daemon.restart();
    assert.equal(runs(), 0, 'the second start did not run pandoc');
    const formats = await api(daemon, '/formats/md');
    assert.equal(formats.status, 200);
    assert.ok(JSON.stringify(formats.body).includes('"rst"'), 'md -> rst is offered from the findings');

    const form = new FormData();
    form.append('target', 'rst');
    form.append('wait', '30');
    form.append('file', new Blob(['# Findings\n\nA paragraph that says FINDINGS-MARKER.\n']), 'notes.md');
    const created = await api(daemon, '/conversions', { method: 'POST', body: form });
    assert.equal(created.body.status, 'succeeded', JSON.stringify(created.body));
    const output = await api(daemon, `/conversions/${created.body.id}/download`);
    assert.match(String(output.body), /FINDINGS-MARKER/);
    assert.ok(runs() > 0, 'pandoc ran for the conversion');
    await daemon.stop();

    // Another pandoc (here: the same file, newer): the findings are stale, the next start probes.
    writeFileSync(calls, '');
    const later = new Date(Date.now() + 5000);
    utimesSync(wrapper, later, later);
    daemon = await daemon.restart();
    assert.ok(runs() > 0, 'a changed pandoc is probed at start');
  });
});
