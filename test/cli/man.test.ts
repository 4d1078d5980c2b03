import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, it } from 'node:test';
import type { Command } from 'commander';
import { Context } from '../../cli/context.ts';
import { buildProgram } from '../../cli/program.ts';
import { ROOT } from '../helpers/cli-helpers.ts';

/** man/conv.1 stays complete: every command and option of the program is documented, and it renders cleanly. */

const MAN = join(ROOT, 'man', 'conv.1');
const page = readFileSync(MAN, 'utf8');
/** The page as text, with roff's escaped hyphens and font changes removed. */
const text = page.replace(/\\-/g, '-').replace(/\\f[BIRP]/g, '');

function walk(command: Command, path: string[] = []): { path: string[]; command: Command }[] {
  return command.commands
    .filter((sub) => sub.name() !== 'help')
    .flatMap((sub) => [{ path: [...path, sub.name()], command: sub }, ...walk(sub, [...path, sub.name()])]);
}

describe('man/conv.1', () => {
  const program = buildProgram(new Context({ stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, env: {}, cwd: '/' }, () => ({})));

  it('is listed in package.json "man"', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { man?: string[] };
    assert.ok(pkg.man?.includes('man/conv.1'));
  });

  it('documents every command and every option', () => {
    for (const option of program.options) assert.ok(text.includes(option.long!), `global option ${option.long}`);
    for (const { path, command } of walk(program)) {
      const name = path.join(' ');
      const documented = path.length === 1 ? text.includes(`conv ${name}`) : text.includes(`conv ${path[0]}`) && text.includes(path[1]!);
      assert.ok(documented, `command ${name}`);
      for (const option of command.options) assert.ok(text.includes(option.long!), `${name} ${option.long}`);
    }
  });

  it('documents every exit code and environment variable', () => {
    for (const code of ['0', '1', '2', '3', '4', '5', '6', '7', '8']) assert.match(page, new RegExp(`^\\.B ${code}$`, 'm'));
    for (const name of ['CONV_BASE_URL', 'CONV_API_KEY', 'CONV_PROFILE', 'CONV_WEBHOOK_SECRET', 'NO_COLOR']) assert.ok(page.includes(name), name);
  });

  it('renders without groff warnings', { skip: !existsSync('/usr/bin/groff') && 'groff is not installed' }, async () => {
    const { stderr } = await promisify(execFile)('groff', ['-man', '-ww', '-z', MAN]);
    assert.equal(stderr, '');
  });
});
