#!/usr/bin/env node
/**
 * Runs test files with node:test: most of them `--concurrency` at a time, then those that measure
 * latency under a load they make themselves one at a time, with nothing else on the box (a test
 * file says so with an `@alone` line in its opening comment). Both groups always run; the exit
 * code is the first failure's.
 *
 *   node scripts/run-tests.mjs [--concurrency N] FILE...
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const ALONE_MARK = /^\s*\*\s*@alone\b/m;
/** The opening comment is in the first lines; a mark further down is not one. */
const HEADER_CHARS = 4000;

function parse(argv) {
  let concurrency = 2;
  const files = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--concurrency') concurrency = Number(argv[++i]);
    else files.push(argv[i]);
  }
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new Error('--concurrency takes a whole number of at least 1');
  if (files.length === 0) throw new Error('no test files given');
  return { concurrency, files };
}

function run(files, concurrency) {
  if (files.length === 0) return 0;
  // TAP where no one watches, on every Node (24 prints its spec report everywhere by default), so
  // a log reads the same whichever Node ran it.
  const reporter = process.stdout.isTTY ? [] : ['--test-reporter=tap'];
  const args = ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, ...reporter, ...files];
  const result = spawnSync(process.execPath, args, { stdio: 'inherit' });
  return result.status ?? 1;
}

const { concurrency, files } = parse(process.argv.slice(2));
const alone = files.filter((file) => ALONE_MARK.test(readFileSync(file, 'utf8').slice(0, HEADER_CHARS)));
const shared = files.filter((file) => !alone.includes(file));
const sharedCode = run(shared, concurrency);
if (alone.length > 0) console.log(`# alone, one at a time: ${alone.join(' ')}`);
const aloneCode = run(alone, 1);
process.exit(sharedCode || aloneCode);
