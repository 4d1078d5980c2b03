/**
 * Work that makes no progress ends early, where the engine can tell, as `timeout` with a message
 * that says what stalled; work that progresses slowly is left alone. Through the real engines
 * (Ghostscript, LibreOffice) with short stall windows, and once through the daemon's HTTP API
 * with its settings (postscript_stall_timeout, office_stall_timeout).
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { PDFDocument } from 'pdf-lib';
import { findOffice } from '../../src/engines/office/find-office.ts';
import { createOfficeEngine } from '../../src/engines/office/office-engine.ts';
import { createGhostscriptEngine } from '../../src/engines/postscript/ghostscript-engine.ts';
import { liveChildPids } from '../../src/engines/subprocess.ts';
import type { Engine, EngineJob } from '../../src/engines/types.ts';
import type { PublicConversion } from '../../src/model/conversion.ts';
import { startDaemon, type DaemonHandle } from '../helpers/daemon.ts';
import { rejectsWith } from '../helpers/failure.ts';
import { OFFICE_MARKER } from '../helpers/office.ts';
import { pdfPageTexts } from '../helpers/pdf-text.ts';
import { HOSTILE_POSTSCRIPT } from '../helpers/postscript.ts';
import { longDocx, slowPagesPostScript, tiledDrawing } from '../helpers/stuck-documents.ts';
import { meteredClient, remainingCredits, uploadFile, waitForEnd, type Client } from '../helpers/registry-pairs-daemon.ts';

const required = process.env.CI === 'true';
const ghostscript = createGhostscriptEngine();
const gsStatus = await ghostscript.probe();
const gsSkip = gsStatus.available || required ? false : `Ghostscript is not installed: ${gsStatus.detail ?? ''}`;
const office = await findOffice(process.env);
const officeSkip = office.ready || required ? false : `LibreOffice is not installed here: ${office.ready ? '' : office.problem}`;

/** Stall windows short enough for a test; every stuck run here would otherwise go to its limit (long: the windows count processor time, which a crowded machine hands out slowly). */
const GS_STALL_MS = 2000;
const OFFICE_STALL_MS = 3000;
const TIME_LIMIT_MS = 240_000;

let dir: string;
let counter = 0;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'convd-early-end-'));
});
after(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function write(name: string, content: string | Buffer): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, content);
  return path;
}

function job(source: string, inputPath: string, extra: Partial<EngineJob> = {}): EngineJob {
  return {
    inputPath, outputPath: join(dir, `out-${++counter}.pdf`), source, target: 'pdf', variant: null, options: {},
    signal: new AbortController().signal, onProgress: () => undefined, timeLimitMs: TIME_LIMIT_MS, ...extra,
  };
}

/** Runs the engine with the job's time limit as the runner does (the signal aborts at it), and how long it took. */
async function timed<T>(engine: Engine, made: EngineJob, run: (promise: Promise<unknown>) => Promise<T>): Promise<{ value: T; ms: number }> {
  const began = performance.now();
  const limit = AbortSignal.timeout(made.timeLimitMs ?? TIME_LIMIT_MS);
  const value = await run(engine.convert({ ...made, signal: limit }));
  return { value, ms: performance.now() - began };
}

describe('Ghostscript ends a program that draws nothing', { skip: gsSkip }, () => {
  const engine = createGhostscriptEngine({ stallMs: GS_STALL_MS });
  before(async () => {
    assert.ok((await engine.probe()).available, 'Ghostscript is required under CI');
  });

  it('a PostScript `{ } loop` ends as timeout within seconds of its stall window, saying its PDF stopped growing; no process is left', async () => {
    const made = job('ps', await write('loop.ps', HOSTILE_POSTSCRIPT.loops));
    const { value: failure, ms } = await timed(engine, made, (promise) => rejectsWith(promise, 'timeout'));
    assert.match(failure.message, /used 2 s of processor time without progress and was ended before its time limit: Ghostscript's PDF stayed at \d+ bytes?, the program running on without drawing anything\./);
    // The window counts Ghostscript's processor time: on an idle core about 2 s of the clock, on a
    // machine crowded by other work (the engine runs niced) more, and never the limit.
    assert.ok(ms >= GS_STALL_MS && ms < TIME_LIMIT_MS, `ended after ${Math.round(ms)} ms`);
    assert.deepEqual(liveChildPids(), []);
  });

  it('pages that each compute a while before drawing go on for longer than the window in all, and every page is written', async () => {
    // About 0.08 s of CPU a page, 3 s in all: under a load of several busy processes on two cores
    // (the engine runs niced) a page still takes well under the window.
    const pages = 40;
    const made = job('ps', await write('slow-pages.ps', slowPagesPostScript(pages, 4_000_000)));
    const { ms } = await timed(engine, made, (promise) => promise);
    // Otherwise this proves nothing: the whole run must outlast one window.
    assert.ok(ms > GS_STALL_MS, `the run took ${Math.round(ms)} ms, not longer than the window`);
    const pdf = await PDFDocument.load(await readFile(made.outputPath));
    assert.equal(pdf.getPageCount(), pages);
  });
});

describe('LibreOffice ends a PDF export that stays on one page', { skip: officeSkip }, () => {
  // Room enough for the stuck export's memory to grow until its window ends it: on a busy box it
  // reached the default 2 GiB first (and failed memory_limit, which is not what is shown here).
  const engine = createOfficeEngine({ instances: 1, stallMs: OFFICE_STALL_MS, memoryLimitMb: 6144 });
  before(async () => {
    assert.ok((await engine.probe()).available, 'LibreOffice is required under CI');
  });
  after(async () => {
    await engine.close?.();
  });

  it('a drawing of 400 million tiles ends as timeout within seconds of the window, naming the page; the instance is replaced and the next drawing converts', async () => {
    const made = job('fodg', await write('tiles.fodg', await tiledDrawing(0.001)));
    const { value: failure, ms } = await timed(engine, made, (promise) => rejectsWith(promise, 'timeout'));
    assert.match(failure.message, /made no progress for 3 s and was ended before its time limit: LibreOffice's PDF export got no further than page 1 of 1\./);
    assert.ok(ms >= OFFICE_STALL_MS && ms < TIME_LIMIT_MS, `ended after ${Math.round(ms)} ms`);
    // The same drawing with 10,000 tiles: LibreOffice itself was fine, only the page was stuck.
    const next = job('fodg', await write('few-tiles.fodg', await tiledDrawing(0.2)));
    await engine.convert(next);
    assert.equal((await PDFDocument.load(await readFile(next.outputPath))).getPageCount(), 1);
  });

  it('a long document converts though its load and layout say nothing for longer than the window and its export outlasts it; its pages are the progress', async () => {
    const made = job('docx', await write('long.docx', longDocx(8000, OFFICE_MARKER)));
    const reported: { at: number; percent: number }[] = [];
    const began = performance.now();
    await engine.convert({ ...made, onProgress: (percent) => reported.push({ at: performance.now() - began, percent }) });
    const exporting = reported.filter((report) => report.percent > 0 && report.percent < 100);
    assert.ok(exporting.length > 100, `the export's pages were reported (${exporting.length})`);
    const silent = exporting[0]!.at;
    const total = performance.now() - began;
    // Otherwise this proves nothing: a silence and a whole run longer than a window.
    assert.ok(silent > OFFICE_STALL_MS, `the load and layout took ${Math.round(silent)} ms, not longer than the window`);
    assert.ok(total > OFFICE_STALL_MS * 2, `the conversion took ${Math.round(total)} ms`);
    const texts = await pdfPageTexts(made.outputPath);
    assert.ok(texts.length >= 200, `${texts.length} pages`);
    assert.match(texts.at(-1)!, new RegExp(OFFICE_MARKER));
  });
});

describe('through the daemon: the stall windows are settings, the failure says why', { skip: gsSkip || officeSkip }, () => {
  let daemon: DaemonHandle;
  let client: Client;
  before(async () => {
    daemon = await startDaemon({ args: ['--postscript-stall-timeout', '2s', '--office-stall-timeout', '3s', '--office-instances', '1'] });
    client = await meteredClient(daemon, 'pro');
  });
  after(async () => {
    await daemon?.dispose();
  });

  async function failsEarly(path: string, name: string, message: RegExp): Promise<void> {
    const credits = await remainingCredits(client);
    const began = performance.now();
    const created = await uploadFile(client, { target: 'pdf', wait: '30' }, path, name);
    assert.ok(created.status === 200 || created.status === 202, `${created.status} ${JSON.stringify(created.body)}`);
    const done: PublicConversion = ['succeeded', 'failed'].includes(created.body.status) ? created.body : await waitForEnd(client, created.body.id, 60_000);
    const ms = performance.now() - began;
    assert.equal(done.status, 'failed', JSON.stringify(done));
    assert.equal(done.error?.code, 'timeout');
    assert.match(done.error!.message, message);
    // Ended by the stall window (the message says so), not the plan's limit of minutes.
    assert.ok(ms < 90_000, `${name} ended after ${Math.round(ms)} ms`);
    assert.equal(done.credits, 0);
    assert.equal(await remainingCredits(client), credits, 'nothing charged');
  }

  it('a PostScript loop -> pdf and a stuck drawing -> pdf fail `timeout` in seconds, saying what stalled', async () => {
    await failsEarly(await write('daemon-loop.ps', HOSTILE_POSTSCRIPT.loops), 'loop.ps', /2 s of processor time without progress .*Ghostscript's PDF stayed at/);
    await failsEarly(await write('daemon-tiles.fodg', await tiledDrawing(0.001)), 'tiles.fodg', /no progress for 3 s .*LibreOffice's PDF export got no further than page 1 of 1/);
  });
});
