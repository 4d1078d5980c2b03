/**
 * The postscript engine (Ghostscript's pdfwrite): one generated test per pair on hand-written
 * EPS, PS and legacy Illustrator fixtures, each PDF re-parsed and its text read back; an EPS page
 * the size of its bounding box; and what a tenant's program cannot do under -dSAFER (read the
 * server's files, run commands), how it ends when it never does (the time limit kills its group)
 * or writes without end (the output cap).
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { PDFDocument } from 'pdf-lib';
import { createGhostscriptEngine } from '../../src/engines/postscript/ghostscript-engine.ts';
import { liveChildPids } from '../../src/engines/subprocess.ts';
import type { EngineJob } from '../../src/engines/types.ts';
import { pdfPageTexts } from '../helpers/pdf-text.ts';
import { EPS_BOX, HOSTILE_POSTSCRIPT, PS_PAGES, postscriptFixture } from '../helpers/postscript.ts';
import { OFFICE_MARKER } from '../helpers/office.ts';
import { rejectsWith } from '../helpers/failure.ts';

const engine = createGhostscriptEngine();
const status = await engine.probe();
const pairs = engine.pairs();
/** Ghostscript is a system package: CI installs it; elsewhere the suite says what is missing. */
const skip = !status.available && process.env.CI !== 'true' ? `Ghostscript is not installed: ${status.detail ?? ''}` : false;

let dir: string;
let counter = 0;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'convd-ps-'));
});
after(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

function job(source: string, inputPath: string, extra: Partial<EngineJob> = {}): EngineJob {
  return {
    inputPath, outputPath: join(dir, `out-${++counter}.pdf`), source, target: 'pdf', variant: null, options: {},
    signal: new AbortController().signal, onProgress: () => undefined, ...extra,
  };
}

async function write(name: string, text: string | Buffer): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, text);
  return path;
}

describe('postscript engine', { skip }, () => {
  it('offers eps, ps and ai -> pdf, a step the registry chains on from', () => {
    assert.ok(status.available, status.detail);
    assert.deepEqual(pairs.map((p) => `${p.source}->${p.target}`).sort(), ['ai->pdf', 'eps->pdf', 'ps->pdf']);
    for (const pair of pairs) assert.equal(pair.intermediate, true);
  });
});

describe('every postscript pair converts, its PDF re-parsed and read', { skip }, () => {
  for (const pair of pairs) {
    it(`${pair.source} -> ${pair.target}`, async () => {
      const source = pair.source as 'eps' | 'ps' | 'ai';
      assert.ok(['eps', 'ps', 'ai'].includes(source), `no fixture for ${pair.source}: add one`);
      const made = job(source, await write(`in.${source}`, postscriptFixture(source)));
      await engine.convert(made);
      const pdf = await PDFDocument.load(await readFile(made.outputPath));
      const texts = await pdfPageTexts(made.outputPath);
      assert.ok(texts.join('\n').includes(OFFICE_MARKER), `the text: ${JSON.stringify(texts)}`);
      if (source === 'eps') {
        const { width, height } = pdf.getPage(0).getSize();
        assert.deepEqual([Math.round(width), Math.round(height)], [EPS_BOX.width, EPS_BOX.height], 'the page is the bounding box');
      }
      assert.equal(pdf.getPageCount(), source === 'ps' ? PS_PAGES : 1);
    });
  }
});

describe('a tenant\'s PostScript program', { skip }, () => {
  it('cannot read the server\'s files (-dSAFER): input_invalid, nothing of the file in any output', async () => {
    const made = job('ps', await write('passwd.ps', HOSTILE_POSTSCRIPT.readsPasswd));
    const failure = await rejectsWith(engine.convert(made), 'input_invalid');
    assert.match(failure.message, /invalidfileaccess/);
    assert.ok(!failure.message.includes(dir), 'no server path in the message');
    if (existsSync(made.outputPath)) assert.ok(!(await readFile(made.outputPath, 'latin1')).includes('root:'), 'no line of /etc/passwd');
  });

  it('cannot run a command through %pipe%', async () => {
    const marker = '/tmp/convd-gs-pwned';
    await rm(marker, { force: true });
    await rejectsWith(engine.convert(job('ps', await write('pipe.ps', HOSTILE_POSTSCRIPT.pipes))), 'input_invalid');
    assert.equal(existsSync(marker), false, 'the command did not run');
  });

  it('that never ends is killed with its group at the time limit: timeout, no process left', async () => {
    const began = Date.now();
    await rejectsWith(engine.convert(job('ps', await write('loop.ps', HOSTILE_POSTSCRIPT.loops), { timeLimitMs: 1500 })), 'timeout');
    assert.ok(Date.now() - began < 6000);
    assert.deepEqual(liveChildPids(), []);
  });

  it('that writes pages without end stops at the output cap', async () => {
    const failure = await rejectsWith(engine.convert(job('ps', await write('pages.ps', HOSTILE_POSTSCRIPT.pages), { maxOutputBytes: 200_000, timeLimitMs: 60_000 })), 'conversion_failed');
    assert.match(failure.message, /larger than its limit/);
    assert.deepEqual(liveChildPids(), []);
  });

  it('that is not PostScript fails input_invalid in words', async () => {
    const failure = await rejectsWith(engine.convert(job('ps', await write('garbage.ps', HOSTILE_POSTSCRIPT.garbage))), 'input_invalid');
    assert.match(failure.message, /The PS file could not be read/);
  });
});
