import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Command } from 'commander';
import { Context } from '../../cli/context.ts';
import { buildProgram } from '../../cli/program.ts';
import { ROOT, cleanEnv, runConv, spawnConv, tempDir } from '../helpers/cli-helpers.ts';

/** Argument parsing, usage errors (exit 2), help and version: the CLI in-process. */

let home: { path: string; remove: () => Promise<void> };
let env: NodeJS.ProcessEnv;

before(async () => {
  home = await tempDir('conv-args-');
  // An empty config dir: no profile of the machine running the tests leaks in.
  env = cleanEnv({ HOME: home.path, XDG_CONFIG_HOME: join(home.path, 'config') });
  await writeFile(join(home.path, 'in.png'), 'not really a png');
});

after(() => home.remove());

const conv = (args: string[], extra: NodeJS.ProcessEnv = {}) => runConv(args, { env: { ...env, ...extra }, cwd: home.path });

function allCommands(command: Command, path: string[] = []): string[][] {
  return command.commands
    .filter((sub) => sub.name() !== 'help')
    .flatMap((sub) => [[...path, sub.name()], ...allCommands(sub, [...path, sub.name()])]);
}

describe('help and version', () => {
  const program = buildProgram(new Context({ stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, env: {}, cwd: '/' }, () => ({})));
  const commands = allCommands(program);

  it('covers every command of the stable surface (docs/cli.md)', () => {
    const names = commands.map((path) => path.join(' '));
    for (const name of ['convert', 'get', 'list', 'cancel', 'delete', 'download', 'formats', 'account', 'webhook verify', 'config set', 'config get', 'config list', 'config use', 'completion']) {
      assert.ok(names.includes(name), `conv ${name} exists`);
    }
  });

  for (const path of [[], ...commands]) {
    it(`conv ${[...path, '--help'].join(' ')} prints usage with examples and exits 0`, async () => {
      const result = await conv([...path, '--help']);
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stdout, new RegExp(`^Usage: conv${path.length ? ` ${path.join(' ')}` : ''}`));
      assert.match(result.stdout, /\nExamples:\n {2}\$ .*conv /);
      assert.equal(result.stderr, '');
    });
  }

  it('--help shows the global options on subcommands', async () => {
    const { stdout } = await conv(['get', '--help']);
    assert.match(stdout, /Global Options:[\s\S]*--base-url <url>[\s\S]*--json/);
  });

  it('--version prints the package version', async () => {
    const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
    const result = await conv(['--version']);
    assert.equal(result.code, 0);
    assert.equal(result.stdout.trim(), version);
  });

  it('conv alone prints the help on stderr and exits 2', async () => {
    const result = await conv([]);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /Usage: conv/);
  });
});

describe('usage errors exit 2 with error: usage: …', () => {
  const cases: [string, string[], RegExp][] = [
    ['an unknown command', ['frobnicate'], /unknown command 'frobnicate'/],
    ['a misspelled command (with a suggestion)', ['convrt'], /Did you mean convert\?/],
    ['an unknown option', ['list', '--colour'], /unknown option '--colour'/],
    ['convert without --to', ['convert', 'in.png'], /required option '-t, --to <format>' not specified/],
    ['convert without inputs', ['convert', '--to', 'webp'], /missing required argument 'inputs'/],
    ['a bad --limit', ['list', '--limit', '500'], /must be from 1 to 100/],
    ['a bad --status', ['list', '--status', 'done'], /Allowed choices are queued, fetching/],
    ['-O without =', ['convert', 'in.png', '--to', 'webp', '-O', 'quality'], /must be key=value/],
    ['--wait swallowing a file name', ['convert', '--wait', 'in.png', '--to', 'webp'], /must be a number of seconds/],
    ['a missing input file', ['convert', 'nope.png', '--to', 'webp'], /input_not_found: no such file: nope\.png/],
    ['stdin without --from', ['convert', '-', '--to', 'webp'], /needs --from/],
    ['stdin twice', ['convert', '-', '-', '--from', 'png', '--to', 'webp'], /only once/],
    ['-o - with several inputs', ['convert', 'in.png', 'in.png', '--to', 'webp', '-o', '-'], /single input/],
    ['-o - with --json', ['convert', 'in.png', '--to', 'webp', '-o', '-', '--json'], /both want stdout/],
    ['-o file with several inputs', ['convert', 'in.png', 'in.png', '--to', 'webp', '-o', 'x.webp'], /must be a directory/],
    ['-o into a missing directory', ['convert', 'in.png', '--to', 'webp', '-o', 'no/such/x.webp'], /does not exist/],
    ['a long idempotency key', ['convert', 'in.png', '--to', 'webp', '--idempotency-key', 'k'.repeat(65)], /at most 64/],
    ['an unknown completion shell', ['completion', 'tcsh'], /Allowed choices are bash, zsh, fish/],
    ['a bad base URL', ['account', '--base-url', 'localhost:7700', '--api-key', 'k'], /invalid base URL \(from flag\)/],
  ];
  for (const [what, args, message] of cases) {
    it(what, async () => {
      const result = await conv(args);
      assert.equal(result.code, 2, `exit code for ${args.join(' ')}: ${result.stderr}`);
      assert.match(result.stderr, /^error: (usage|input_not_found): /m);
      assert.match(result.stderr, message);
      assert.equal(result.stdout, '');
    });
  }
});

describe('no server configured', () => {
  for (const args of [['get', 'cnv_1'], ['list'], ['cancel', 'cnv_1'], ['delete', 'cnv_1'], ['download', 'cnv_1'], ['account']]) {
    it(`conv ${args[0]} says how to point at a server and exits 2`, async () => {
      const result = await conv(args);
      assert.equal(result.code, 2);
      assert.match(result.stderr, /^error: no_server: /);
      assert.match(result.stderr, /--base-url URL, CONV_BASE_URL, or `conv config set base-url URL`/);
    });
  }

  it('a base URL without an API key exits 3 and says how to set one', async () => {
    const result = await conv(['account'], { CONV_BASE_URL: 'http://127.0.0.1:9/v1' });
    assert.equal(result.code, 3);
    assert.match(result.stderr, /^error: unauthenticated: no API key for http:\/\/127\.0\.0\.1:9\/v1/);
    assert.match(result.stderr, /conv config set api-key/);
  });
});

describe('the real binary', () => {
  it('runs, reports usage errors with exit 2 and writes nothing to stdout', async () => {
    const version = await spawnConv(['--version'], { env });
    assert.equal(version.code, 0, version.stderr);
    assert.match(version.stdout, /^\d+\.\d+\.\d+\n$/);
    const bad = await spawnConv(['list', '--limit', 'x'], { env });
    assert.equal(bad.code, 2);
    assert.equal(bad.stdout, '');
    assert.match(bad.stderr, /^error: usage: option '--limit <n>' argument 'x' is invalid/);
  });
});
