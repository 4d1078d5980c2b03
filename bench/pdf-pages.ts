/**
 * pdf-pages: Page 1 of a PDF -> PNG at 150 dpi, 50 times, through the daemon (multipart submission
 * with `wait`, then download; the compiled daemon, its engine host rendering with PDFium) against
 * the library called directly: @embedpdf/pdfium's own API (the file read into PDFium's memory, page
 * 1 loaded and rendered) and the same sharp PNG encode, 50 times. Both render the same pixels and
 * encode them the same way: the outputs are compared byte for byte.
 *
 * One conversion at a time on both sides, so the ratio is the service's cost per conversion on
 * top of the work itself: HTTP, the store, the queue, the hand-off to the engine host and back.
 * The direct renders run in a process of their own at the engine host's priority (niceness 10,
 * in a session of its own whose autogroup is niced too: src/engines/process/group.ts): the
 * engine host yields to anything else the machine runs, and a baseline at full priority beside
 * it would measure that policy, not the service (measured: 2.43x with a full-priority baseline
 * while another session's tests ran, 1.33x a minute before).
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PDFDocument, rgb, StandardFonts } from 'pdf-lib';
import sharp from 'sharp';
import { startBaseline } from './lib/baseline-process.ts';
import { cpuTimeMs } from './lib/cpu.ts';
import { ROOT, startBenchDaemon, type BenchDaemon } from './lib/daemon.ts';
import { steadyDataDir } from './lib/steady-data-dir.ts';
import { warmDaemon } from './lib/warm-daemon.ts';
import { cpuOf, hostPids } from './lib/engine-hosts.ts';
import { json, multipartBody } from './lib/http.ts';
import { WireConnection } from './lib/http-wire.ts';
import { photoPng } from './lib/images.ts';
import type { DirectPlan, DirectRound } from './lib/pdf-pages-direct.ts';
import { removeDir, tempDir } from './lib/processes.ts';
import { SERVICE_CPU_TARGET_MS, type BenchResult } from './types.ts';

const COUNT = 50;
const DPI = 150;
/** US Letter at 150 dpi. */
const WIDTH = 1275;
const HEIGHT = 1650;
/** Alternating rounds (convd, direct, convd, direct, ...), best of each: the least disturbed. */
const ROUNDS = 5;
/** Untimed conversions first: the engine host starts and loads PDFium with the first one. */
const WARMUP = 10;
const TARGET_RATIO = 1.3;

/** A page as documents have them: a heading, 45 lines of text, a rule and a photo. */
async function samplePdf(): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  const bold = await doc.embedFont(StandardFonts.HelveticaBold);
  const page = doc.addPage([612, 792]);
  page.drawText('Quarterly report: the numbers, and what they mean', { x: 56, y: 730, size: 16, font: bold });
  page.drawLine({ start: { x: 56, y: 720 }, end: { x: 556, y: 720 }, thickness: 1, color: rgb(0.2, 0.3, 0.6) });
  for (let line = 0; line < 45; line++) {
    page.drawText(`${line + 1}. Revenue grew in every region but one; costs fell where the new process ran longest.`, { x: 56, y: 700 - line * 12, size: 9.5, font });
  }
  const photo = await doc.embedPng(await photoPng(300, 200, 7));
  page.drawImage(photo, { x: 356, y: 40, width: 200, height: 133 });
  return doc.save();
}

/** The baseline process (bench/lib/pdf-pages-direct.ts), started at the engine host's priority. */
async function startDirect(plan: DirectPlan): Promise<{ round(k: number): Promise<DirectRound>; loadMs: number; stop(): Promise<void> }> {
  const baseline = startBaseline(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'lib', 'pdf-pages-direct.ts'), JSON.stringify(plan)], 'the direct baseline process');
  const ready = await baseline.next<{ ready: boolean; loadMs: number }>();
  return {
    loadMs: ready.loadMs,
    round: async (k) => {
      baseline.send(`round ${k}`);
      return baseline.next<DirectRound>();
    },
    stop: () => baseline.stop(),
  };
}

/** Where one conversion's time went, in ms, as the client and the conversion's own timestamps tell. */
interface Timing {
  /** From sending the submission to the answer (upload, queue, engine, store, answer). */
  submit: number;
  /** The engine's run as the conversion records it (started_at to finished_at, ms resolution). */
  engine: number;
  download: number;
}

async function throughDaemon(daemon: BenchDaemon, connection: WireConnection, pdf: Buffer): Promise<{ output: Buffer; timing: Timing }> {
  const { contentType, body } = multipartBody({ target: 'png', wait: '30', page: '1', dpi: String(DPI) }, 'report.pdf', 'application/pdf', pdf);
  const auth = { authorization: `Bearer ${daemon.apiKey}` };
  const sent = performance.now();
  const created = await connection.request('POST', '/v1/conversions', { ...auth, 'content-type': contentType }, body);
  const answered = performance.now();
  const conversion = json<{ id: string; status: string; error: unknown; started_at: string; finished_at: string }>(created);
  if (created.status !== 200 || conversion.status !== 'succeeded') {
    throw new Error(`answered ${created.status} ${conversion.status} ${JSON.stringify(conversion.error)}`);
  }
  const download = await connection.request('GET', `/v1/conversions/${conversion.id}/download`, auth);
  if (download.status !== 200) throw new Error(`download answered ${download.status}`);
  const engine = Date.parse(conversion.finished_at) - Date.parse(conversion.started_at);
  return { output: download.body, timing: { submit: answered - sent, engine, download: performance.now() - answered } };
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[sorted.length >> 1] ?? 0;
};

interface Run {
  ms: number;
  timings: Timing[];
  daemonCpuMs: number;
  hostCpuMs: number;
  /** CPU of this process: the HTTP client. */
  clientCpuMs: number;
}

async function timed(pids: { daemon: number; hosts: number[] }, round: () => Promise<Timing[]>): Promise<Run> {
  const daemonBefore = await cpuTimeMs(pids.daemon);
  const hostBefore = await cpuOf(pids.hosts);
  const clientBefore = process.cpuUsage();
  const started = performance.now();
  const timings = await round();
  const ms = performance.now() - started;
  const client = process.cpuUsage(clientBefore);
  return {
    ms,
    timings,
    daemonCpuMs: (await cpuTimeMs(pids.daemon)) - daemonBefore,
    hostCpuMs: (await cpuOf(pids.hosts)) - hostBefore,
    clientCpuMs: (client.user + client.system) / 1000,
  };
}

const fastest = <T extends { ms: number }>(runs: T[]): T => runs.reduce((a, b) => (b.ms < a.ms ? b : a));

async function checkPng(output: Buffer): Promise<string | null> {
  const meta = await sharp(output).metadata();
  return meta.format === 'png' && meta.width === WIDTH && meta.height === HEIGHT ? null : `${meta.format} ${meta.width}x${meta.height}`;
}

export async function benchPdfPages(): Promise<BenchResult> {
  const dir = await tempDir('pdf-pages');
  const notes: string[] = [];
  try {
    const pdf = Buffer.from(await samplePdf());
    const input = join(dir, 'report.pdf');
    await writeFile(input, pdf);
    const outputDir = join(dir, 'direct');
    const direct = await startDirect({ input, outputDir, count: COUNT, warmup: WARMUP, dpi: DPI });
    const steady = await steadyDataDir(join(dir, 'data'));
    notes.push(steady.note);
    const daemon = await startBenchDaemon({ dataDir: join(dir, 'data'), apiKey: steady.apiKey });
    const connection = new WireConnection(daemon.host, daemon.port);
    const daemonRuns: Run[] = [];
    const directRuns: DirectRound[] = [];
    let daemonOutput: Buffer | undefined;
    try {
      const coldStarted = performance.now();
      daemonOutput = (await throughDaemon(daemon, connection, pdf)).output;
      const coldMs = performance.now() - coldStarted;
      for (let i = 1; i < WARMUP; i++) await throughDaemon(daemon, connection, pdf);
      notes.push((await warmDaemon(daemon)).note);
      const pids = { daemon: daemon.pid, hosts: await hostPids(daemon.pid) };
      for (let round = 0; round < ROUNDS; round++) {
        const outputs: Buffer[] = [];
        daemonRuns.push(await timed(pids, async () => {
          const timings: Timing[] = [];
          for (let i = 0; i < COUNT; i++) {
            const { output, timing } = await throughDaemon(daemon, connection, pdf);
            outputs.push(output);
            timings.push(timing);
          }
          return timings;
        }));
        for (const output of outputs) {
          const problem = await checkPng(output);
          if (problem) notes.push(`INVALID: convd output ${problem}`);
        }
        directRuns.push(await direct.round(round));
      }
      notes.push(`first conversion through a fresh daemon (engine host started, PDFium loaded): ${coldMs.toFixed(0)} ms; PDFium alone loads in ${direct.loadMs.toFixed(0)} ms`);
      if (pids.hosts.length === 0) notes.push('INVALID: no engine host process found');
    } finally {
      connection.close();
      await Promise.all([daemon.stop(), direct.stop()]);
    }

    const directOutput = await readFile(join(outputDir, String(ROUNDS - 1), 'page-0.png'));
    const problem = await checkPng(directOutput);
    if (problem) notes.push(`INVALID: direct output ${problem}`);
    const identical = daemonOutput !== undefined && daemonOutput.equals(directOutput);
    const convd = fastest(daemonRuns);
    const baseline = fastest(directRuns);
    const ratio = convd.ms / baseline.ms;
    const perConversion = (ms: number) => `${(ms / COUNT).toFixed(1)} ms`;
    const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
    return {
      title: `${COUNT} PDF page 1 -> PNG at ${DPI} dpi`,
      figures: `convd ${seconds(convd.ms)} (${perConversion(convd.ms)} each) vs PDFium + sharp ${seconds(baseline.ms)} (${perConversion(baseline.ms)})`,
      ratio: `${ratio.toFixed(2)}x`,
      target: `<= ${TARGET_RATIO}x`,
      pass: ratio <= TARGET_RATIO && !notes.some((note) => note.startsWith('INVALID')),
      notes: [
        `one Letter page (heading, 45 lines of text, a photo; ${(pdf.length / 1024).toFixed(0)} KiB) -> ${WIDTH}x${HEIGHT} PNG (${(directOutput.length / 1024).toFixed(0)} KiB), one conversion at a time; best of ${ROUNDS} alternating rounds after ${WARMUP} untimed conversions each; the direct renders in a process at the engine host's priority`,
        `rounds: convd ${daemonRuns.map((run) => seconds(run.ms)).join(', ')}; direct ${directRuns.map((run) => seconds(run.ms)).join(', ')}`,
        `per conversion in convd's best round (medians): submission answered after ${median(convd.timings.map((t) => t.submit)).toFixed(1)} ms, of which the engine ran ${median(convd.timings.map((t) => t.engine)).toFixed(0)} ms (started_at to finished_at); download ${median(convd.timings.map((t) => t.download)).toFixed(1)} ms; direct ${perConversion(baseline.ms)} on average`,
        `CPU time of the best rounds: convd ${seconds(convd.daemonCpuMs)} + its engine host ${seconds(convd.hostCpuMs)} + this client ${seconds(convd.clientCpuMs)} vs direct ${seconds(baseline.cpuMs)}`,
        `the service's own CPU per conversion (daemon + engine host - the direct side's, per conversion; target at most ${SERVICE_CPU_TARGET_MS} ms): ${perConversion(convd.daemonCpuMs + convd.hostCpuMs - baseline.cpuMs)}`,
        `outputs ${identical ? 'byte-identical' : 'NOT byte-identical'}`,
        ...notes,
      ],
    };
  } finally {
    await removeDir(dir);
  }
}
