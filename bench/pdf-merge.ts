/**
 * pdf-merge: 50 one-page PDFs merged into one through the daemon (one multipart submission with
 * 50 `file` parts in order, target=pdf and `wait`, then download) against the project's qpdf
 * (WebAssembly, src/engines/pdfops/qpdf.ts) merging the same files directly in one run.
 *
 * One merge at a time, so the ratio is what the service adds to it: 50 uploads in one request,
 * the store, the queue, the hand-off to the engine host, the download. The direct side runs in a
 * process of its own at the engine host's priority (bench/lib/direct-rounds.ts says why); medians
 * of alternating rounds are judged. Both merged PDFs are read back: 50 pages, each with its
 * part's marker, in order.

 */
import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PDFDocument, rgb, StandardFonts } from 'pdf-lib';
import { cpuTimeMs } from './lib/cpu.ts';
import { startBenchDaemon, type BenchDaemon } from './lib/daemon.ts';
import { median, startDirectRounds, type DirectRound } from './lib/direct-rounds.ts';
import { cpuOf, hostPids } from './lib/engine-hosts.ts';
import { json, multipartFiles, type FilePart } from './lib/http.ts';
import { WireConnection } from './lib/http-wire.ts';
import { removeDir, tempDir } from './lib/processes.ts';
import type { BenchResult } from './types.ts';

const PARTS = 50;
/** Alternating rounds (convd, direct, ...); the median of each is judged. Odd, so it is one round's. */
const ROUNDS = 7;
/** Untimed merges first on both sides: the engine host starts with the first. */
const WARMUP = 2;
const TARGET_RATIO = 1.3;

/** `part 07 of 50`: on its page, and read back from the merged PDF to check the order. */
const marker = (number: number): string => `part ${String(number).padStart(2, '0')} of ${PARTS}`;

/** One Letter page: its marker as a heading, a few lines of text and a coloured bar. */
async function partPdf(number: number): Promise<Buffer> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  const page = doc.addPage([612, 792]);
  page.drawText(marker(number), { x: 56, y: 730, size: 18, font });
  for (let line = 0; line < 20; line++) {
    page.drawText(`${line + 1}. Minutes of meeting ${number}: the items agreed, and who does what by when.`, { x: 56, y: 700 - line * 14, size: 10, font });
  }
  page.drawRectangle({ x: 56, y: 100, width: 500, height: 40, color: rgb(number / PARTS, 0.5, 0.8) });
  return Buffer.from(await doc.save());
}

interface DaemonRun {
  ms: number;
  /** From sending the submission to its answer (upload, queue, engine, store). */
  submitMs: number;
  /** The engine's run as the conversion records it (started_at to finished_at). */
  engineMs: number;
  /** Request sent to created_at, created_at to started_at (the server's clock is this machine's). */
  uploadMs: number;
  queueMs: number;
  daemonCpuMs: number;
  hostCpuMs: number;
  pdf: Buffer;
}

async function throughDaemon(daemon: BenchDaemon, connection: WireConnection, files: readonly FilePart[], hosts: number[]): Promise<DaemonRun> {
  const { contentType, body } = multipartFiles({ target: 'pdf', wait: '30' }, files);
  const auth = { authorization: `Bearer ${daemon.apiKey}` };
  const daemonBefore = await cpuTimeMs(daemon.pid);
  const hostBefore = await cpuOf(hosts);
  const sent = performance.now();
  const sentAt = Date.now();
  const created = await connection.request('POST', '/v1/conversions', { ...auth, 'content-type': contentType }, body);
  const answered = performance.now();
  if (created.status !== 200) throw new Error(`convd answered ${created.status}: ${created.body.toString('utf8').slice(0, 500)}`);
  const conversion = json<{ id: string; status: string; error: unknown; created_at: string; started_at: string; finished_at: string }>(created);
  if (conversion.status !== 'succeeded') throw new Error(`convd's merge ended ${conversion.status}: ${JSON.stringify(conversion.error)}`);
  const download = await connection.request('GET', `/v1/conversions/${conversion.id}/download`, auth);
  if (download.status !== 200) throw new Error(`download answered ${download.status}`);
  const done = performance.now();
  return {
    ms: done - sent,
    submitMs: answered - sent,
    engineMs: Date.parse(conversion.finished_at) - Date.parse(conversion.started_at),
    uploadMs: Date.parse(conversion.created_at) - sentAt,
    queueMs: Date.parse(conversion.started_at) - Date.parse(conversion.created_at),
    daemonCpuMs: (await cpuTimeMs(daemon.pid)) - daemonBefore,
    hostCpuMs: (await cpuOf(hosts)) - hostBefore,
    pdf: download.body,
  };
}

/**
 * What is wrong with a merged PDF: not 50 pages (pdf-lib), or a page without its part's marker
 * (pdftotext, pages split at its form feeds; where it is missing only the count is checked).
 */
async function checkMerged(path: string, side: string): Promise<string[]> {
  const pages = (await PDFDocument.load(await readFile(path))).getPageCount();
  if (pages !== PARTS) return [`INVALID: ${side}'s merge has ${pages} pages, not ${PARTS}`];
  let text: string;
  try {
    text = (await promisify(execFile)('pdftotext', [path, '-'])).stdout;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [`${side}'s page order not checked: no pdftotext (apt-get install poppler-utils)`];
    throw error;
  }
  const texts = text.split('\f');
  const wrong = Array.from({ length: PARTS }, (_, index) => index).filter((index) => !texts[index]?.includes(marker(index + 1)));
  if (wrong.length === 0) return [];
  const listed = wrong.slice(0, 10).map((index) => index + 1).join(', ');
  return [`INVALID: ${wrong.length} of ${side}'s pages do not hold their part's marker (pages ${listed}${wrong.length > 10 ? ', ...' : ''}): a merge out of order`];
}

export async function benchPdfMerge(): Promise<BenchResult> {
  const dir = await tempDir('pdf-merge');
  try {
    const inputDir = join(dir, 'parts');
    await mkdir(inputDir);
    const files: FilePart[] = [];
    for (let number = 1; number <= PARTS; number++) {
      const name = `part-${String(number).padStart(2, '0')}.pdf`;
      const data = await partPdf(number);
      await writeFile(join(inputDir, name), data);
      files.push({ name, type: 'application/pdf', data });
    }
    const outputDir = join(dir, 'direct');
    const plan = { inputDir, names: files.map((file) => file.name), outputDir, warmup: WARMUP };
    const direct = await startDirectRounds('pdf-merge-direct.ts', plan, 'the direct qpdf process');
    const daemonRuns: DaemonRun[] = [];
    const directRuns: DirectRound[] = [];
    try {
      const daemon = await startBenchDaemon({ dataDir: join(dir, 'data') });
      const connection = new WireConnection(daemon.host, daemon.port);
      try {
        for (let i = 0; i < WARMUP; i++) await throughDaemon(daemon, connection, files, []);
        const hosts = await hostPids(daemon.pid);
        for (let round = 0; round < ROUNDS; round++) {
          daemonRuns.push(await throughDaemon(daemon, connection, files, hosts));
          directRuns.push(await direct.round(round));
        }
      } finally {
        connection.close();
        await daemon.stop();
      }
    } finally {
      await direct.stop();
    }

    const directMs = median(directRuns.map((run) => run.ms));
    const ms = (value: number) => `${value.toFixed(0)} ms`;
    const problems = await checkMerged(join(outputDir, `${ROUNDS - 1}.pdf`), 'direct');
    const directNotes = [
      `${PARTS} one-page Letter PDFs (${(files.reduce((sum, file) => sum + file.data.length, 0) / 1024).toFixed(0)} KiB in all), one merge at a time; ${WARMUP} untimed merges on each side first; qpdf in a process at the engine host's priority`,
      `direct rounds ${directRuns.map((run) => ms(run.ms)).join(', ')}; CPU median ${ms(median(directRuns.map((run) => run.cpuMs)))}`,
    ];
    const mergedPath = join(dir, 'convd.pdf');
    await writeFile(mergedPath, daemonRuns.at(-1)!.pdf);
    problems.push(...(await checkMerged(mergedPath, 'convd')));
    const convdMs = median(daemonRuns.map((run) => run.ms));
    const ratio = convdMs / directMs;
    const middle = (pick: (run: DaemonRun) => number) => ms(median(daemonRuns.map(pick)));
    return {
      title: `${PARTS} one-page PDFs merged into one`,
      figures: `convd ${ms(convdMs)} vs qpdf ${ms(directMs)} (medians of ${ROUNDS})`,
      ratio: `${ratio.toFixed(2)}x`,
      target: `<= ${TARGET_RATIO}x`,
      pass: ratio <= TARGET_RATIO && !problems.some((problem) => problem.startsWith('INVALID')),
      notes: [
        `convd rounds ${daemonRuns.map((run) => ms(run.ms)).join(', ')}; submission answered after ${middle((run) => run.submitMs)} (median), of which the upload to created_at ${middle((run) => run.uploadMs)}, created_at to started_at ${middle((run) => run.queueMs)}, the run (started_at to finished_at) ${middle((run) => run.engineMs)}`,
        `CPU, medians: convd ${middle((run) => run.daemonCpuMs)} + its engine host ${middle((run) => run.hostCpuMs)} vs direct ${ms(median(directRuns.map((run) => run.cpuMs)))}`,
        ...directNotes,
        ...problems,
      ],
    };
  } finally {
    await removeDir(dir);
  }
}
