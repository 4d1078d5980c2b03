import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { cleanEnv, runConv, tempDir } from '../helpers/cli-helpers.ts';

/**
 * The completion scripts, run in the real shells: bash through its completion function with
 * COMP_WORDS set as readline would, fish through `complete -C`, zsh through its parser and a
 * completion run with the completion system's builtins stubbed to record what is offered.
 */

const exec = promisify(execFile);
let dir: { path: string; remove: () => Promise<void> };
const scripts: Record<string, string> = {};

before(async () => {
  dir = await tempDir('conv-completion-');
  await mkdir(join(dir.path, 'photos'));
  await writeFile(join(dir.path, 'photos', 'cat.png'), '');
  for (const shell of ['bash', 'zsh', 'fish']) {
    const result = await runConv(['completion', shell], { env: cleanEnv() });
    assert.equal(result.code, 0, result.stderr);
    scripts[shell] = join(dir.path, `conv.${shell}`);
    await writeFile(scripts[shell]!, result.stdout);
  }
});
after(() => dir.remove());

async function bashComplete(line: string): Promise<string[]> {
  const words = line.split(' ');
  const program = `source ${scripts.bash}
COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')})
COMP_CWORD=${words.length - 1}
_conv_completion
printf '%s\\n' "\${COMPREPLY[@]}"`;
  const { stdout } = await exec('bash', ['-c', program], { cwd: dir.path });
  return stdout.split('\n').filter(Boolean).sort();
}

describe('bash completion', () => {
  it('completes commands, subcommands, options, choices and files', async () => {
    assert.deepEqual(await bashComplete('conv con'), ['config', 'convert']);
    assert.deepEqual(await bashComplete('conv config '), ['get', 'list', 'set', 'unset', 'use']);
    assert.deepEqual(await bashComplete('conv convert --w'), ['--wait']);
    assert.ok((await bashComplete('conv convert -')).includes('--idempotency-key'));
    assert.ok((await bashComplete('conv convert -')).includes('--base-url'), 'global options too');
    assert.deepEqual(await bashComplete('conv list --status f'), ['failed', 'fetching']);
    assert.deepEqual(await bashComplete('conv completion '), ['bash', 'fish', 'zsh']);
    assert.deepEqual(await bashComplete('conv convert photos/c'), ['photos/cat.png']);
    assert.deepEqual(await bashComplete('conv convert x.png -o photos/'), ['photos/cat.png']);
    // The value of an option is not taken for a subcommand.
    assert.deepEqual(await bashComplete('conv --profile config con'), ['config', 'convert']);
    assert.deepEqual(await bashComplete('conv --api-key '), []);
  });
});

describe('fish completion', { skip: !existsSync('/usr/bin/fish') && 'fish is not installed' }, () => {
  async function fishComplete(line: string): Promise<string[]> {
    const { stdout } = await exec('fish', ['--no-config', '-c', `source ${scripts.fish}; complete -C '${line}'`], { cwd: dir.path });
    return stdout.split('\n').filter(Boolean).map((entry) => entry.split('\t')[0]!).sort();
  }

  it('completes commands with descriptions, subcommands, options and choices', async () => {
    const { stdout } = await exec('fish', ['--no-config', '-c', `source ${scripts.fish}; complete -C 'conv con'`]);
    assert.match(stdout, /^config\tmanage profiles/m);
    assert.match(stdout, /^convert\tconvert files/m);
    assert.deepEqual(await fishComplete('conv config u'), ['unset', 'use']);
    assert.deepEqual(await fishComplete('conv list --status q'), ['queued']);
    assert.ok((await fishComplete('conv convert --')).includes('--to'));
    assert.deepEqual(await fishComplete('conv convert photos/c'), ['photos/cat.png']);
  });
});

describe('zsh completion', { skip: !existsSync('/usr/bin/zsh') && 'zsh is not installed' }, () => {
  it('parses', async () => {
    await exec('zsh', ['-n', scripts.zsh!]);
  });

  /** Runs `_conv` for a command line with compdef/_describe/compadd/_files recording their offers. */
  async function zshComplete(line: string): Promise<string[]> {
    const words = line.split(' ');
    const program = `
compdef() { :; }
_describe() { local -a __items; __items=("\${(@P)\${@[-1]}}"); for x in "\${__items[@]}"; do print -r -- "\${x%%:*}"; done; }
compadd() { [[ $1 == -- ]] && shift; for x in "$@"; do print -r -- "$x"; done; }
_files() { print -r -- FILES; }
source ${scripts.zsh}
words=(${words.map((w) => `'${w}'`).join(' ')})
CURRENT=${words.length}
PREFIX='${words[words.length - 1]}'
_conv`;
    const { stdout } = await exec('zsh', ['-f', '-c', program]);
    const prefix = words[words.length - 1]!;
    return stdout.split('\n').filter((entry) => entry && (entry === 'FILES' || entry.startsWith(prefix))).sort();
  }

  it('offers commands, subcommands, options, choices and files', async () => {
    assert.deepEqual(await zshComplete('conv con'), ['config', 'convert']);
    assert.deepEqual(await zshComplete('conv config u'), ['unset', 'use']);
    assert.ok((await zshComplete('conv convert --')).includes('--to'));
    assert.deepEqual(await zshComplete('conv list --status q'), ['queued']);
    assert.deepEqual(await zshComplete('conv convert '), ['FILES']);
  });
});
