/**
 * ocr-pdf: a 10-page scanned PDF made searchable (pdf -> pdf with `ocr=true`) through the daemon
 * (multipart submission with `wait`, polled with `?wait=30` to its end, then the download; the
 * compiled daemon, whose chain runs the ocr engine's OCRmyPDF and then the pdfops engine's qpdf)
 * against OCRmyPDF run directly with the arguments and environment the ocr engine gives it
 * (src/engines/ocr/ocrmypdf.ts, run-parts.ts): `-v 1 -l eng --jobs 1 --max-image-mpixels 100
 * --skip-text --output-type pdf --optimize 0 -- in out`, OMP_THREAD_LIMIT=1, TMPDIR a folder of
 * its own. The bench makes the scan: ~150 words of text a page drawn from an SVG in DejaVu fonts
 * by sharp at 300 dpi, blurred, speckled, turned by a degree or less and saved as a greyscale
 * JPEG, each page an image of its own in an image-only Letter PDF (pdf-lib).
 *
 * One conversion at a time, so the ratio is what the service adds to OCR: the upload, the store,
 * the queue, the engine's page count (Ghostscript) before OCRmyPDF, the chain's second step
 * (qpdf, the default `compress` pass), the download. The direct side runs OCRmyPDF as the engine
 * does, through the project's runProcess at the engine's priority (nice 10, its session's
 * autogroup too, dropped to 19 after 2 s) and under the same address-space limit (the daemon's
 * default engine_memory_mb, 1024): only the service differs. Medians of alternating rounds are
 * judged. Both PDFs are read back (pdf-lib, pdftotext): 10 pages, and each page's words against
 * the words drawn on it.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PDFDocument } from 'pdf-lib';
import sharp from 'sharp';
import { finishingArguments } from '../src/engines/pdfops/qpdf-passes.ts';
import { runQpdf } from '../src/engines/pdfops/qpdf.ts';
import { ocrEnvironment } from '../src/engines/ocr/run-parts.ts';
import { ENGINE_NICENESS } from '../src/engines/process/group.ts';
import { searchPath } from '../src/engines/process/path-search.ts';
import { runProcess } from '../src/engines/subprocess.ts';
import { startBenchDaemon, type BenchDaemon } from './lib/daemon.ts';
import { median } from './lib/direct-rounds.ts';
import { cpuTimesMs } from './lib/cpu.ts';
import { hostPids } from './lib/engine-hosts.ts';
import { json, multipartBody, send } from './lib/http.ts';
import { removeDir, tempDir } from './lib/processes.ts';
import type { BenchResult } from './types.ts';
import type { PublicConversion } from '../src/model/conversion.ts';
import { seededRandom } from '../test/helpers/seeded-random.ts';
import { wordRecall } from '../test/helpers/ocr-words.ts';

const PAGES = 10;
const WORDS_PER_PAGE = 150;
/** US Letter at 300 dpi. */
const WIDTH = 2550;
const HEIGHT = 3300;
/** Alternating rounds (convd, direct, ...) after the warm-up; the median of each is judged. Odd, so it is one round's. */
const ROUNDS = 3;
/** Untimed conversions first on both sides: the engine host starts, and OCRmyPDF's and Tesseract's files are read once. */
const WARMUP = 1;
const TARGET_RATIO = 1.15;
/** Below this share of the drawn words read back, a side's result is not a fair OCR result. */
const MIN_RECALL = 0.9;
/** The daemon's defaults the engine passes on: max_input_pixels (100,000,000) and engine_memory_mb. */
const MAX_INPUT_PIXELS = 100_000_000;
const ENGINE_MEMORY_MB = 1024;

/** The arguments src/engines/ocr/ocrmypdf.ts gives OCRmyPDF for pdf -> pdf with only `ocr=true`, ocr_jobs 1. */
function ocrmypdfArgs(input: string, output: string): string[] {
  return [
    '-v', '1', '-l', 'eng', '--jobs', '1', '--max-image-mpixels', String(MAX_INPUT_PIXELS / 1_000_000),
    '--skip-text', '--output-type', 'pdf', '--optimize', '0', '--', input, output,
  ];
}

const WORDS = (
  'the a of to and in that is for it as with on by from at which but an this be are was were will ' +
  'report quarter orders shipped time rose region returns fell where process ran team agreed review ' +
  'costs before next meeting budget office supplier invoice payment customer account service delivery ' +
  'warehouse schedule project manager staff training safety policy contract renewal equipment repair ' +
  'survey results market price figure table summary minutes action item owner date planning board ' +
  'member council library museum garden station harbour bridge river valley mountain village morning ' +
  'evening weather letter answer question number measure record storage network printer scanner paper'
).split(' ');


interface PageText {
  heading: string;
  lines: string[];
  /** Every word drawn on the page, lower case, without punctuation: what OCR should read back. */
  words: string[];
}

/** A page's text: a heading, then ~150 words in sentences, broken into lines of at most 60 characters. */
function pageText(number: number): PageText {
  const next = seededRandom(number * 7919);
  const heading = `Page ${number} of ${PAGES}: minutes of the board meeting`;
  const words: string[] = [];
  let prose = '';
  let sentence = 0;
  for (let i = 0; i < WORDS_PER_PAGE; i++) {
    const word = WORDS[Math.floor(next() * WORDS.length)]!;
    words.push(word);
    const first = sentence === 0;
    sentence += 1;
    const last = sentence >= 8 + Math.floor(next() * 8) || i === WORDS_PER_PAGE - 1;
    prose += `${prose ? ' ' : ''}${first ? word[0]!.toUpperCase() + word.slice(1) : word}${last ? '.' : ''}`;
    if (last) sentence = 0;
  }
  const lines: string[] = [];
  let line = '';
  for (const word of prose.split(' ')) {
    if (line && line.length + 1 + word.length > 60) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  const headingWords = heading.toLowerCase().replace(/[^a-z0-9 ]/g, '').split(' ').filter(Boolean);
  return { heading, lines, words: [...headingWords, ...words] };
}

/**
 * One page as a scanner gives it: the text drawn at 300 dpi (DejaVu Sans heading, DejaVu Serif
 * 12 pt body), blurred a little, the paper greyed with grain and dark specks, turned by up to a
 * degree either way (the corners filled in paper grey), cropped back to Letter, greyscale JPEG.
 */
async function scannedPage(number: number, text: PageText): Promise<Buffer> {
  const body = text.lines.map((line, index) => `<text x="300" y="${560 + index * 75}">${line}</text>`).join('');
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}">`
    + '<rect width="100%" height="100%" fill="white"/>'
    + `<text x="300" y="420" font-family="DejaVu Sans" font-weight="bold" font-size="58" fill="#111">${text.heading}</text>`
    + `<g font-family="DejaVu Serif" font-size="50" fill="#161616">${body}</g>`
    + `<text x="${WIDTH / 2}" y="${HEIGHT - 220}" text-anchor="middle" font-family="DejaVu Sans" font-size="38" fill="#333">${number}</text>`
    + '</svg>';
  const drawn = await sharp(Buffer.from(svg)).flatten({ background: '#ffffff' }).blur(0.7).toColourspace('b-w').raw().toBuffer({ resolveWithObject: true });
  const pixels = drawn.data;
  const next = seededRandom(number * 104729);
  for (let i = 0; i < pixels.length; i++) {
    let value = pixels[i]! * 0.9 + 12 + (next() - 0.5) * 36;
    if (next() < 0.0004) value -= 150;
    pixels[i] = value < 0 ? 0 : value > 255 ? 255 : value;
  }
  const angle = (number % 2 ? 1 : -1) * (0.3 + 0.7 * next());
  const turned = await sharp(pixels, { raw: { width: WIDTH, height: HEIGHT, channels: 1 } })
    .rotate(angle, { background: { r: 238, g: 238, b: 238 } })
    .toColourspace('b-w')
    .raw()
    .toBuffer({ resolveWithObject: true });
  const { width, height, channels } = turned.info;
  return sharp(turned.data, { raw: { width, height, channels } })
    .extract({ left: (width - WIDTH) >> 1, top: (height - HEIGHT) >> 1, width: WIDTH, height: HEIGHT })
    .toColourspace('b-w')
    .jpeg({ quality: 75 })
    .withMetadata({ density: 300 })
    .toBuffer();
}

/** The scan: each JPEG drawn over a whole Letter page, nothing else on it (no text layer). */
async function scannedPdf(texts: PageText[]): Promise<Buffer> {
  const doc = await PDFDocument.create();
  for (let number = 1; number <= PAGES; number++) {
    const image = await doc.embedJpg(await scannedPage(number, texts[number - 1]!));
    const page = doc.addPage([612, 792]);
    page.drawImage(image, { x: 0, y: 0, width: 612, height: 792 });
  }
  return Buffer.from(await doc.save());
}

/** CPU (ms) of a process so far, its own and its reaped children's; a process that has gone counts 0. */
const cpuOfProcess = (pid: number) => cpuTimesMs(pid).catch(() => ({ own: 0, children: 0 }));

/** The CPU of the daemon, of its engine hosts, and of the processes they have reaped (OCRmyPDF, Tesseract, Ghostscript), by pid. */
async function cpuSnapshot(daemonPid: number): Promise<Map<number, { own: number; children: number }>> {
  const snapshot = new Map<number, { own: number; children: number }>();
  for (const pid of [daemonPid, ...(await hostPids(daemonPid))]) snapshot.set(pid, await cpuOfProcess(pid));
  return snapshot;
}

interface DaemonRun {
  /** Submission to the end of the download. */
  ms: number;
  /** `created_at` to `started_at`: stored, queued, handed to a worker. */
  queuedMs: number;
  /** `started_at` to `finished_at`: the chain's run (page count, OCRmyPDF, qpdf, the result stored). */
  runMs: number;
  downloadMs: number;
  /** The daemon process's own CPU during the conversion. */
  daemonCpuMs: number;
  /** The engine hosts' own CPU (the chain's qpdf pass runs there). */
  hostCpuMs: number;
  /** CPU of the processes the daemon and its hosts reaped: OCRmyPDF and what it ran, Ghostscript's page count. */
  toolsCpuMs: number;
  pdf: Buffer;
}

async function throughDaemon(daemon: BenchDaemon, scan: Buffer): Promise<DaemonRun> {
  const auth = { authorization: `Bearer ${daemon.apiKey}` };
  const { contentType, body } = multipartBody({ target: 'pdf', ocr: 'true', wait: '30' }, 'scan.pdf', 'application/pdf', scan);
  const before = await cpuSnapshot(daemon.pid);
  const sent = performance.now();
  const created = await send(daemon, 'POST', '/v1/conversions', { ...auth, 'content-type': contentType }, body);
  if (created.status !== 200 && created.status !== 202) throw new Error(`convd answered ${created.status}: ${created.body.toString('utf8').slice(0, 500)}`);
  let conversion = json<PublicConversion>(created);
  while (conversion.status !== 'succeeded') {
    if (conversion.status === 'failed' || conversion.status === 'cancelled' || conversion.status === 'expired') {
      throw new Error(`convd's OCR ended ${conversion.status}: ${JSON.stringify(conversion.error)}`);
    }
    const polled = await send(daemon, 'GET', `/v1/conversions/${conversion.id}?wait=30`, auth);
    if (polled.status !== 200) throw new Error(`GET answered ${polled.status}: ${polled.body.toString('utf8').slice(0, 500)}`);
    conversion = json<PublicConversion>(polled);
  }
  const ended = performance.now();
  const download = await send(daemon, 'GET', `/v1/conversions/${conversion.id}/download`, auth);
  if (download.status !== 200) throw new Error(`download answered ${download.status}`);
  const done = performance.now();
  const after = await cpuSnapshot(daemon.pid);
  let hostCpuMs = 0;
  let toolsCpuMs = 0;
  for (const [pid, now] of after) {
    const then = before.get(pid) ?? { own: 0, children: 0 };
    if (pid !== daemon.pid) hostCpuMs += now.own - then.own;
    toolsCpuMs += now.children - then.children;
  }
  const at = (value: string | null) => Date.parse(value ?? '');
  return {
    ms: done - sent,
    queuedMs: at(conversion.started_at) - at(conversion.created_at),
    runMs: at(conversion.finished_at) - at(conversion.started_at),
    downloadMs: done - ended,
    daemonCpuMs: after.get(daemon.pid)!.own - before.get(daemon.pid)!.own,
    hostCpuMs,
    toolsCpuMs,
    pdf: download.body,
  };
}

interface DirectRun {
  ms: number;
  /** OCRmyPDF's CPU and that of everything it ran (reaped by it, then by this process). */
  cpuMs: number;
  output: string;
}

/** OCRmyPDF as the engine runs it: in a folder of its own (its cwd and TMPDIR), at the engine's priority and memory limit. */
async function direct(ocrmypdf: string, tools: { tesseract: string; gs: string }, input: string, dir: string, name: string): Promise<DirectRun> {
  const work = await mkdtemp(join(dir, 'ocr-'));
  const output = join(dir, `${name}.pdf`);
  const cpuBefore = (await cpuOfProcess(process.pid)).children;
  const started = performance.now();
  const result = await runProcess(ocrmypdf, ocrmypdfArgs(input, output), {
    cwd: work,
    // The engine's own environment, with the Tesseract and Ghostscript its probe finds first on PATH.
    env: ocrEnvironment(work, tools),
    dieWithParent: true,
    niceness: ENGINE_NICENESS,
    memoryLimitMb: ENGINE_MEMORY_MB,
  });
  const ms = performance.now() - started;
  const cpuMs = (await cpuOfProcess(process.pid)).children - cpuBefore;
  await rm(work, { recursive: true, force: true });
  if (result.code !== 0) throw new Error(`ocrmypdf exited with ${result.code ?? result.signal}: ${result.stderrTail.slice(-1000)}`);
  return { ms, cpuMs, output };
}

/** The chain's second step on the direct side's output, timed apart: qpdf with convd's default `compress` pass. */
async function qpdfPassMs(input: string, output: string): Promise<number> {
  const started = performance.now();
  const result = await runQpdf(finishingArguments(null, {}), input, output, new AbortController().signal);
  if (result.code !== 0 && result.code !== 3) throw new Error(`qpdf exited with ${result.code}: ${result.messages.join(' / ')}`);
  return performance.now() - started;
}

interface Readback {
  /** Each page's text as pdftotext reads it, or undefined without pdftotext. */
  pages?: string[];
  read: number;
  drawn: number;
  problems: string[];
}

/**
 * What a result holds: 10 pages (pdf-lib), and, by pdftotext (poppler-utils; without it only the
 * count is checked), how many of each page's drawn words its text layer gives back (each word
 * counted as often as it was drawn).
 */
async function readBack(path: string, side: string, texts: PageText[]): Promise<Readback> {
  const pages = (await PDFDocument.load(await readFile(path))).getPageCount();
  if (pages !== PAGES) return { read: 0, drawn: 0, problems: [`INVALID: ${side}'s PDF has ${pages} pages, not ${PAGES}`] };
  let text: string;
  try {
    text = (await promisify(execFile)('pdftotext', [path, '-'], { maxBuffer: 64 * 1024 * 1024 })).stdout;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { read: 0, drawn: 0, problems: [`${side}'s text not checked: no pdftotext (apt-get install poppler-utils)`] };
    throw error;
  }
  const pageTexts = text.split('\f').slice(0, PAGES);
  let read = 0;
  let drawn = 0;
  for (let index = 0; index < PAGES; index++) {
    const recall = wordRecall(texts[index]!.words.join(' '), pageTexts[index] ?? '');
    read += recall.found;
    drawn += recall.total;
  }
  const problems = read < drawn * MIN_RECALL ? [`INVALID: ${side}'s text layer gives back ${read} of ${drawn} drawn words, under ${MIN_RECALL * 100} %`] : [];
  return { pages: pageTexts, read, drawn, problems };
}

/** The Tesseract and Ghostscript the ocr engine's probe finds (the configured ones, else PATH's). */
async function ocrTools(): Promise<{ tesseract: string; gs: string }> {
  const path = process.env.PATH ?? '';
  const tesseract = process.env.CONVD_TESSERACT_PATH ?? (await searchPath('tesseract', path));
  const gs = process.env.CONVD_GHOSTSCRIPT_PATH ?? (await searchPath('gs', path));
  if (!tesseract || !gs) throw new Error('tesseract or gs not found: apt-get install ocrmypdf tesseract-ocr-eng');
  return { tesseract, gs };
}

export async function benchOcrPdf(): Promise<BenchResult> {
  const ocrmypdf = process.env.CONVD_OCRMYPDF_PATH ?? (await searchPath('ocrmypdf', process.env.PATH ?? ''));
  if (!ocrmypdf) throw new Error('ocrmypdf not found: apt-get install ocrmypdf tesseract-ocr-eng (the ocr engine needs them too)');
  const tools = await ocrTools();
  const dir = await tempDir('ocr-pdf');
  try {
    const texts = Array.from({ length: PAGES }, (_, index) => pageText(index + 1));
    const made = performance.now();
    const scan = await scannedPdf(texts);
    const makeMs = performance.now() - made;
    const input = join(dir, 'scan.pdf');
    await writeFile(input, scan);
    const directDir = join(dir, 'direct');
    await mkdir(directDir);
    const loadBefore = loadavg()[0]!;

    const daemonRuns: DaemonRun[] = [];
    const directRuns: DirectRun[] = [];
    const qpdfMs: number[] = [];
    let coldMs = 0;
    let directColdMs = 0;
    const daemon = await startBenchDaemon({ dataDir: join(dir, 'data') });
    try {
      for (let i = 0; i < WARMUP; i++) {
        const cold = await throughDaemon(daemon, scan);
        if (i === 0) coldMs = cold.ms;
        const warm = await direct(ocrmypdf, tools, input, directDir, `warmup-${i}`);
        if (i === 0) directColdMs = warm.ms;
      }
      for (let round = 0; round < ROUNDS; round++) {
        daemonRuns.push(await throughDaemon(daemon, scan));
        const run = await direct(ocrmypdf, tools, input, directDir, String(round));
        directRuns.push(run);
        qpdfMs.push(await qpdfPassMs(run.output, join(directDir, `${round}-qpdf.pdf`)));
      }
    } finally {
      await daemon.stop();
    }
    const loadAfter = loadavg()[0]!;

    const convdPath = join(dir, 'convd.pdf');
    await writeFile(convdPath, daemonRuns.at(-1)!.pdf);
    const directPath = directRuns.at(-1)!.output;
    const convdText = await readBack(convdPath, 'convd', texts);
    const directText = await readBack(directPath, 'direct', texts);
    const sameText = convdText.pages && directText.pages
      ? convdText.pages.every((page, index) => page === directText.pages![index])
      : undefined;

    const convdMs = median(daemonRuns.map((run) => run.ms));
    const directMs = median(directRuns.map((run) => run.ms));
    const ratio = convdMs / directMs;
    const s = (value: number) => `${(value / 1000).toFixed(2)} s`;
    const ms = (value: number) => `${value.toFixed(0)} ms`;
    const middle = (pick: (run: DaemonRun) => number, unit = ms) => unit(median(daemonRuns.map(pick)));
    const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
    const percent = (back: Readback) => (back.drawn ? `${back.read} of ${back.drawn} words (${((back.read / back.drawn) * 100).toFixed(1)} %)` : 'not read');
    const problems = [...convdText.problems, ...directText.problems];
    return {
      title: `a ${PAGES}-page scanned PDF -> searchable PDF (ocr=true)`,
      figures: `convd ${s(convdMs)} vs ocrmypdf ${s(directMs)} (medians of ${ROUNDS})`,
      ratio: `${ratio.toFixed(2)}x`,
      target: `<= ${TARGET_RATIO}x`,
      pass: ratio <= TARGET_RATIO && !problems.some((problem) => problem.startsWith('INVALID')),
      notes: [
        `${PAGES} Letter pages at 300 dpi, ~${WORDS_PER_PAGE} words each, greyscale JPEG (${mib(scan.length)}, made in ${s(makeMs)}); one conversion at a time; ${WARMUP} untimed on each side first (convd's first ${s(coldMs)}, OCRmyPDF's first ${s(directColdMs)}); OCRmyPDF direct at the engine's priority and memory limit; load ${loadBefore.toFixed(2)} before, ${loadAfter.toFixed(2)} after`,
        `rounds: convd ${daemonRuns.map((run) => s(run.ms)).join(', ')}; ocrmypdf ${directRuns.map((run) => s(run.ms)).join(', ')}`,
        `convd's medians: created_at to started_at ${middle((run) => run.queuedMs)}, the run (started_at to finished_at: page count, OCRmyPDF, qpdf, stored) ${middle((run) => run.runMs, s)}, download ${middle((run) => run.downloadMs)}; the chain's qpdf pass on the direct output, timed apart: ${ms(median(qpdfMs))}`,
        `CPU per conversion, medians: the daemon itself ${middle((run) => run.daemonCpuMs)}, its engine hosts ${middle((run) => run.hostCpuMs)}, OCRmyPDF and the tools (reaped by them) ${middle((run) => run.toolsCpuMs, s)}; direct OCRmyPDF ${s(median(directRuns.map((run) => run.cpuMs)))}`,
        `results: convd ${mib(daemonRuns.at(-1)!.pdf.length)}, direct ${mib((await stat(directPath)).size)}; text read back: convd ${percent(convdText)}, direct ${percent(directText)}${sameText === undefined ? '' : sameText ? '; the same text on every page' : '; the text DIFFERS between the sides'}`,
        ...problems,
      ],
    };
  } finally {
    await removeDir(dir);
  }
}
