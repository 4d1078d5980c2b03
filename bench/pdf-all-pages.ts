/**
 * pdf-all-pages: a 20-page PDF -> a PNG of every page at 150 dpi, as one zip, through the daemon
 * (multipart submission with pages=all and `wait`, then download; the compiled daemon, its engine
 * host rendering with PDFium) against the same work done directly: @embedpdf/pdfium rendering
 * each page, sharp encoding it to a PNG file, yazl storing the files in a zip uncompressed.
 *
 * One conversion at a time, so the ratio is what the service adds to a conversion of 20 pages:
 * upload, store, queue, the hand-off to the engine host, the zip's download. The direct side runs
 * in a process of its own at the engine host's priority (bench/lib/direct-rounds.ts says why).
 * Medians of alternating rounds are judged. The daemon's zip is read back: 20 PNGs, each decoded
 * at 1275x1650, compared byte for byte with the direct side's.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PDFDocument, rgb, StandardFonts } from 'pdf-lib';
import sharp from 'sharp';
import { cpuTimeMs } from './lib/cpu.ts';
import { startBenchDaemon, type BenchDaemon } from './lib/daemon.ts';
import { median, startDirectRounds, type DirectRound } from './lib/direct-rounds.ts';
import { cpuOf, hostPids } from './lib/engine-hosts.ts';
import { json, multipartBody } from './lib/http.ts';
import { WireConnection } from './lib/http-wire.ts';
import { removeDir, tempDir } from './lib/processes.ts';
import { zipFiles } from './lib/zip-texts.ts';
import type { BenchResult } from './types.ts';

const PAGES = 20;
const DPI = 150;
/** US Letter at 150 dpi. */
const WIDTH = 1275;
const HEIGHT = 1650;
/** Alternating rounds (convd, direct, ...); the median of each is judged. Odd, so it is one round's. */
const ROUNDS = 7;
/** Untimed conversions first on both sides: the engine host starts and loads PDFium with the first. */
const WARMUP = 2;
const TARGET_RATIO = 1.3;

/** 20 Letter pages, each a heading with its number, 40 lines of text and a shape of its own colour. */
async function samplePdf(): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  const bold = await doc.embedFont(StandardFonts.HelveticaBold);
  for (let number = 1; number <= PAGES; number++) {
    const page = doc.addPage([612, 792]);
    page.drawText(`Section ${number} of ${PAGES}: where the quarter went`, { x: 56, y: 730, size: 16, font: bold });
    for (let line = 0; line < 40; line++) {
      page.drawText(`${line + 1}. Orders shipped on time rose in region ${number}; returns fell where the new process ran.`, { x: 56, y: 700 - line * 12, size: 9.5, font });
    }
    const hue = number / PAGES;
    page.drawRectangle({ x: 356, y: 60, width: 200, height: 120, color: rgb(hue, 0.4, 1 - hue), borderColor: rgb(0.1, 0.1, 0.1), borderWidth: 2 });
    page.drawEllipse({ x: 150, y: 120, xScale: 80, yScale: 50, color: rgb(1 - hue, hue, 0.3), opacity: 0.8 });
  }
  return doc.save();
}

interface DaemonRun {
  /** Submission to the end of the download. */
  ms: number;
  /** From sending the submission to its answer (upload, queue, engine, store). */
  submitMs: number;
  /** The engine's run as the conversion records it (started_at to finished_at, ms resolution). */
  engineMs: number;
  downloadMs: number;
  /** CPU of the daemon process and of its engine hosts during the conversion. */
  daemonCpuMs: number;
  hostCpuMs: number;
  zip: Buffer;
}

async function throughDaemon(daemon: BenchDaemon, connection: WireConnection, pdf: Buffer, hosts: number[]): Promise<DaemonRun> {
  const { contentType, body } = multipartBody({ target: 'png', pages: 'all', dpi: String(DPI), wait: '30' }, 'report.pdf', 'application/pdf', pdf);
  const auth = { authorization: `Bearer ${daemon.apiKey}` };
  const daemonBefore = await cpuTimeMs(daemon.pid);
  const hostBefore = await cpuOf(hosts);
  const sent = performance.now();
  const created = await connection.request('POST', '/v1/conversions', { ...auth, 'content-type': contentType }, body);
  const answered = performance.now();
  const conversion = json<{ id: string; status: string; error: unknown; started_at: string; finished_at: string }>(created);
  if (created.status !== 200 || conversion.status !== 'succeeded') {
    throw new Error(`convd answered ${created.status} ${conversion.status} ${JSON.stringify(conversion.error)}`);
  }
  const download = await connection.request('GET', `/v1/conversions/${conversion.id}/download`, auth);
  if (download.status !== 200) throw new Error(`download answered ${download.status}`);
  const done = performance.now();
  return {
    ms: done - sent,
    submitMs: answered - sent,
    engineMs: Date.parse(conversion.finished_at) - Date.parse(conversion.started_at),
    downloadMs: done - answered,
    daemonCpuMs: (await cpuTimeMs(daemon.pid)) - daemonBefore,
    hostCpuMs: (await cpuOf(hosts)) - hostBefore,
    zip: download.body,
  };
}

/** The zip's PNGs by name, and what is wrong with them: not 20, or one not a 1275x1650 PNG. */
async function readPages(zip: Buffer, side: string): Promise<{ pages: Map<string, Buffer>; problems: string[] }> {
  const pages = await zipFiles(zip);
  const problems: string[] = [];
  if (pages.size !== PAGES) problems.push(`INVALID: ${side}'s zip holds ${pages.size} entries, not ${PAGES}`);
  for (const [name, png] of pages) {
    const meta = await sharp(png).metadata().catch((error: unknown) => ({ format: `undecodable (${String(error)})`, width: 0, height: 0 }));
    if (!name.endsWith('.png') || meta.format !== 'png' || meta.width !== WIDTH || meta.height !== HEIGHT) {
      problems.push(`INVALID: ${side}'s ${name} is ${meta.format} ${meta.width}x${meta.height}`);
    }
  }
  return { pages, problems };
}

/** Whether both zips hold the same names in the same order with the same bytes. */
function samePages(a: Map<string, Buffer>, b: Map<string, Buffer>): boolean {
  const names = [...a.keys()];
  return names.join() === [...b.keys()].join() && names.every((name) => a.get(name)!.equals(b.get(name)!));
}

export async function benchPdfAllPages(): Promise<BenchResult> {
  const dir = await tempDir('pdf-all-pages');
  try {
    const pdf = Buffer.from(await samplePdf());
    const input = join(dir, 'report.pdf');
    await writeFile(input, pdf);
    const outputDir = join(dir, 'direct');
    const direct = await startDirectRounds('pdf-all-pages-direct.ts', { input, outputDir, warmup: WARMUP, dpi: DPI }, 'the direct baseline process');
    const daemonRuns: DaemonRun[] = [];
    const directRuns: DirectRound[] = [];
    let coldMs = 0;
    try {
      const daemon = await startBenchDaemon({ dataDir: join(dir, 'data') });
      const connection = new WireConnection(daemon.host, daemon.port);
      try {
        coldMs = (await throughDaemon(daemon, connection, pdf, [])).ms;
        for (let i = 1; i < WARMUP; i++) await throughDaemon(daemon, connection, pdf, []);
        const hosts = await hostPids(daemon.pid);
        for (let round = 0; round < ROUNDS; round++) {
          daemonRuns.push(await throughDaemon(daemon, connection, pdf, hosts));
          directRuns.push(await direct.round(round));
        }
      } finally {
        connection.close();
        await daemon.stop();
      }
    } finally {
      await direct.stop();
    }

    const convd = await readPages(daemonRuns.at(-1)!.zip, 'convd');
    const baseline = await readPages(await readFile(join(outputDir, `${ROUNDS - 1}.zip`)), 'direct');
    const convdMs = median(daemonRuns.map((run) => run.ms));
    const directMs = median(directRuns.map((run) => run.ms));
    const ratio = convdMs / directMs;
    const ms = (value: number) => `${value.toFixed(0)} ms`;
    const middle = (pick: (run: DaemonRun) => number) => ms(median(daemonRuns.map(pick)));
    const problems = [...convd.problems, ...baseline.problems];
    return {
      title: `a ${PAGES}-page PDF -> PNG of every page at ${DPI} dpi, as a zip`,
      figures: `convd ${ms(convdMs)} vs PDFium + sharp + yazl ${ms(directMs)} (medians of ${ROUNDS})`,
      ratio: `${ratio.toFixed(2)}x`,
      target: `<= ${TARGET_RATIO}x`,
      pass: ratio <= TARGET_RATIO && problems.length === 0,
      notes: [
        `${PAGES} Letter pages of text and shapes (${(pdf.length / 1024).toFixed(0)} KiB) -> a zip of ${PAGES} ${WIDTH}x${HEIGHT} PNGs (${(daemonRuns.at(-1)!.zip.length / 1024).toFixed(0)} KiB), one conversion at a time; ${WARMUP} untimed conversions on each side first; the direct side in a process at the engine host's priority`,
        `rounds: convd ${daemonRuns.map((run) => ms(run.ms)).join(', ')}; direct ${directRuns.map((run) => ms(run.ms)).join(', ')}`,
        `convd's medians: submission answered after ${middle((run) => run.submitMs)}, of which the engine ran ${middle((run) => run.engineMs)} (started_at to finished_at); download ${middle((run) => run.downloadMs)}`,
        `CPU, medians: convd ${middle((run) => run.daemonCpuMs)} + its engine host ${middle((run) => run.hostCpuMs)} vs direct ${ms(median(directRuns.map((run) => run.cpuMs)))}`,
        `first conversion through a fresh daemon (engine host started, PDFium loaded): ${ms(coldMs)}`,
        `zips: convd's ${samePages(convd.pages, baseline.pages) ? 'holds the same PNGs, byte for byte, as' : 'does NOT hold the same bytes as'} the direct side's`,
        ...problems,
      ],
    };
  } finally {
    await removeDir(dir);
  }
}
