#!/usr/bin/env node
/**
 * `npm run build`: compiles src/, daemon/ and cli/ into dist/ with tsc, only when something it is
 * built from changed since the last build. `npm start` runs it before the daemon, and a full tsc
 * run takes 7-12 s where nothing changed; tsc's own incremental mode still takes about 4 s to find
 * that out. So the last build leaves a fingerprint of its inputs (every source file's path, size
 * and modification time, the compiler settings, the lockfile) in dist/.build-fingerprint, and a
 * build whose fingerprint matches does nothing. Anything else (an edited, added or deleted
 * file, a checkout, a new TypeScript) runs tsc, incrementally, so that a stale dist/ is never run.
 *
 * `--force` (or a missing dist/) builds whatever the fingerprint says; `--check` only says whether
 * dist/ is current (the test suites run the compiled daemon when it is). Plain JavaScript: it runs
 * before anything is compiled, with nothing but Node.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = join(ROOT, 'dist');
const FINGERPRINT = join(DIST, '.build-fingerprint');
const SOURCE_DIRS = ['src', 'daemon', 'cli'];
const SETTINGS = ['tsconfig.json', 'tsconfig.build.json', 'package.json', 'package-lock.json'];
/**
 * Files copied into dist/ as they are: the office engine's bridge runs under LibreOffice's Python,
 * and the web pages' style sheet and script are served as they are written.
 */
const COPIED = [
  'src/engines/office/bridge.py', 'src/engines/office/confine.py', 'src/engines/office/field_scan.py', 'src/engines/office/flat_file.py', 'src/engines/office/font_names.py', 'src/engines/office/fonts.conf',
  'daemon/web/assets/style.css', 'daemon/web/assets/app.js',
];

function* filesUnder(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* filesUnder(path);
    else if (entry.isFile()) yield path;
  }
}

function fingerprint() {
  const hash = createHash('sha256');
  const files = [...SOURCE_DIRS.flatMap((dir) => [...filesUnder(join(ROOT, dir))]), ...SETTINGS.map((name) => join(ROOT, name))]
    .filter((path) => existsSync(path))
    .sort();
  for (const path of files) {
    const info = statSync(path);
    hash.update(`${relative(ROOT, path)}\0${info.size}\0${info.mtimeMs}\n`);
  }
  // The compiler itself: a new TypeScript may emit differently.
  const typescript = join(ROOT, 'node_modules', 'typescript', 'package.json');
  if (existsSync(typescript)) hash.update(JSON.parse(readFileSync(typescript, 'utf8')).version);
  return hash.digest('hex');
}

const force = process.argv.includes('--force');
const wanted = fingerprint();
const built = existsSync(join(DIST, 'daemon', 'main.js')) && existsSync(join(DIST, 'cli', 'main.js'));
const fresh = built && existsSync(FINGERPRINT) && readFileSync(FINGERPRINT, 'utf8') === wanted;
// `--check`: builds nothing; exit 0 when dist/ is the build of these sources, 1 when it is not.
if (process.argv.includes('--check')) process.exit(fresh ? 0 : 1);
if (!force && fresh) process.exit(0);

// A build that fails half-way must not leave the fingerprint of the one before.
rmSync(FINGERPRINT, { force: true });
// Said on stderr: `npm start` is silent for the seconds tsc takes otherwise.
process.stderr.write(`build: compiling src/, daemon/ and cli/ into dist/ (${built ? 'sources changed since the last build' : 'no build yet'})\n`);
const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const result = spawnSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json')], { cwd: ROOT, stdio: 'inherit' });
if (result.status !== 0) process.exit(result.status ?? 1);
for (const file of COPIED) cpSync(join(ROOT, file), join(DIST, file));
writeFileSync(FINGERPRINT, wanted);
