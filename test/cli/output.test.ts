import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { colorsFor } from '../../cli/colors.ts';
import type { Io } from '../../cli/io.ts';
import { Output, renderTable } from '../../cli/output.ts';
import { ProgressLine, createProgress } from '../../cli/progress.ts';
import { Capture } from '../helpers/cli-helpers.ts';

/** Output conventions: colour only on a terminal without NO_COLOR, data on stdout, errors on stderr. */

function io(tty: boolean, env: NodeJS.ProcessEnv = {}): { io: Io; stdout: Capture; stderr: Capture } {
  const stdout = new Capture(tty);
  const stderr = new Capture(tty);
  return { io: { stdout: stdout as unknown as Io['stdout'], stderr, stdin: process.stdin, env, cwd: '/' }, stdout, stderr };
}

describe('colour', () => {
  it('is used on a terminal only, and never with NO_COLOR or TERM=dumb', () => {
    assert.equal(colorsFor({ write: () => true, isTTY: true }, {}).red('x'), '\x1b[31mx\x1b[39m');
    assert.equal(colorsFor({ write: () => true, isTTY: false }, {}).red('x'), 'x');
    assert.equal(colorsFor({ write: () => true, isTTY: true }, { NO_COLOR: '1' }).red('x'), 'x');
    assert.equal(colorsFor({ write: () => true, isTTY: true }, { NO_COLOR: '' }).red('x'), '\x1b[31mx\x1b[39m', 'an empty NO_COLOR does not count');
    assert.equal(colorsFor({ write: () => true, isTTY: true }, { TERM: 'dumb' }).red('x'), 'x');
  });
});

describe('Output', () => {
  it('prints one JSON document: indented on a terminal, one line in a pipe', () => {
    const piped = io(false);
    new Output(piped.io, { json: true, quiet: false }).json({ a: [1, 2] });
    assert.equal(piped.stdout.text, '{"a":[1,2]}\n');
    const terminal = io(true, { NO_COLOR: '1' });
    new Output(terminal.io, { json: true, quiet: false }).json({ a: 1 });
    assert.equal(terminal.stdout.text, '{\n  "a": 1\n}\n');
  });

  it('writes errors to stderr as "error: <code>: <message>", plain when not a terminal', () => {
    const piped = io(false);
    new Output(piped.io, { json: false, quiet: true }).error('not_found', 'No conversion', 'a hint');
    assert.equal(piped.stderr.text, 'error: not_found: No conversion\na hint\n');
    assert.equal(piped.stdout.text, '');
  });

  it('--quiet keeps essential lines (ids) and drops the rest', () => {
    const { io: streams, stdout, stderr } = io(false);
    const out = new Output(streams, { json: false, quiet: true });
    out.line('chatter');
    out.note('more chatter');
    out.essential('cnv_1');
    assert.equal(stdout.text, 'cnv_1\n');
    assert.equal(stderr.text, '');
  });

  it('aligns table columns by what is visible, ignoring colour codes', () => {
    const colors = colorsFor({ write: () => true, isTTY: true }, {});
    const text = renderTable(['A', 'B'], [[colors.green('ok'), 'x'], ['longer', 'y']], colorsFor({ write: () => true }, {}));
    assert.equal(text, 'A       B\n\x1b[32mok\x1b[39m      x\nlonger  y\n');
  });
});

describe('progress', () => {
  it('is drawn only on a terminal and not with --quiet', () => {
    assert.equal(createProgress(new Capture(false), 1, false), null);
    assert.equal(createProgress(new Capture(true), 1, true), null);
    assert.ok(createProgress(new Capture(true), 1, false) instanceof ProgressLine);
  });

  it('redraws one line in place and clears it', () => {
    const stderr = new Capture(true);
    const line = new ProgressLine(stderr, 1);
    line.update(0, { name: 'a.png', status: 'processing', progress: 50 });
    assert.match(stderr.text, /^\r\x1b\[2K\[#+-+\]  50% processing a\.png$/);
    const filled = /\[(#+)(-+)\]/.exec(stderr.text)!;
    assert.equal(filled[1]!.length, filled[2]!.length, 'half the bar');
    line.clear();
    assert.ok(stderr.text.endsWith('\r\x1b[2K'));
  });

  it('summarizes several conversions', () => {
    const stderr = new Capture(true);
    const line = new ProgressLine(stderr, 3);
    line.update(0, { name: 'a', status: 'succeeded', progress: 100 });
    assert.match(stderr.text, /1\/3 done$/);
  });
});
