/**
 * The baseline of the pdf-all-pages bench, run as a process of its own at the engine host's
 * priority (see bench/pdf-all-pages.ts): every page of a PDF rendered by @embedpdf/pdfium called
 * directly, the way its documentation shows, encoded to PNG by sharp into files, and the files
 * written into one zip by yazl, stored uncompressed as the daemon stores them
 * (src/engines/archive.ts). The same work the engine host does, without the service around it.
 *
 * argv[2]: a DirectPlan as JSON. Prints `{"ready":true}` once PDFium is loaded and warm, then for
 * each line `round <k>` on stdin writes `<outputDir>/<k>/page-NN.png` and `<outputDir>/<k>.zip`
 * and prints `{"ms":…,"cpuMs":…}`. Ends when stdin closes.
 */
import { createWriteStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { pipeline } from 'node:stream/promises';
import { init, type WrappedPdfiumModule } from '@embedpdf/pdfium';
import sharp from 'sharp';
import { ZipFile } from 'yazl';
import type { DirectRound } from './direct-rounds.ts';
import { freshDir } from './processes.ts';

export interface DirectPlan {
  input: string;
  outputDir: string;
  warmup: number;
  dpi: number;
}


/** FPDFBitmap_BGR, which FPDF_REVERSE_BYTE_ORDER (0x10) writes as R, G, B; FPDF_ANNOT (0x01): the engine's flags. */
const BITMAP_BGR = 2;
const RENDER_FLAGS = 0x01 | 0x10;

/** What is used of the Emscripten runtime (its types come from @types/emscripten, not installed). */
interface Heap {
  HEAPU8: Uint8Array;
  wasmExports: { malloc(size: number): number; free(pointer: number): void };
}

/** `page-07.png` for page 7 of 20: the daemon's names (numberedName in src/engines/archive.ts). */
const pageName = (number: number, last: number): string => `page-${String(number).padStart(String(last).length, '0')}.png`;

/** Every page of `input` -> PNG files in `dir`, then one zip of them at `zipPath`. */
async function convert(lib: WrappedPdfiumModule, dpi: number, input: string, dir: string, zipPath: string): Promise<void> {
  const heap = lib.pdfium as unknown as Heap;
  const bytes = await readFile(input);
  const file = heap.wasmExports.malloc(bytes.length);
  heap.HEAPU8.set(bytes, file);
  const document = lib.FPDF_LoadMemDocument(file, bytes.length, '');
  const paths: string[] = [];
  try {
    const count = lib.FPDF_GetPageCount(document);
    for (let index = 0; index < count; index++) {
      const page = lib.FPDF_LoadPage(document, index);
      const width = Math.round((lib.FPDF_GetPageWidthF(page) * dpi) / 72);
      const height = Math.round((lib.FPDF_GetPageHeightF(page) * dpi) / 72);
      const pixels = heap.wasmExports.malloc(width * height * 3);
      const bitmap = lib.FPDFBitmap_CreateEx(width, height, BITMAP_BGR, pixels, width * 3);
      lib.FPDFBitmap_FillRect(bitmap, 0, 0, width, height, 0xffffffff);
      lib.FPDF_RenderPageBitmap(bitmap, page, 0, 0, width, height, 0, RENDER_FLAGS);
      lib.FPDFBitmap_Destroy(bitmap);
      lib.FPDF_ClosePage(page);
      const path = join(dir, pageName(index + 1, count));
      try {
        // HEAPU8 read after the malloc: the view is replaced when the heap grows.
        await sharp(heap.HEAPU8.subarray(pixels, pixels + width * height * 3), { raw: { width, height, channels: 3 } }).png().toFile(path);
      } finally {
        heap.wasmExports.free(pixels);
      }
      paths.push(path);
    }
  } finally {
    lib.FPDF_CloseDocument(document);
    heap.wasmExports.free(file);
  }
  const zip = new ZipFile();
  for (const path of paths) zip.addFile(path, path.slice(dir.length + 1), { compress: false });
  zip.end();
  await pipeline(zip.outputStream, createWriteStream(zipPath));
}

const plan = JSON.parse(process.argv[2]!) as DirectPlan;
const say = (message: object) => process.stdout.write(`${JSON.stringify(message)}\n`);

const lib = await init({ wasmBinary: await readFile(createRequire(import.meta.url).resolve('@embedpdf/pdfium/pdfium.wasm')) });
lib.PDFiumExt_Init();
for (let i = 0; i < plan.warmup; i++) {
  const dir = join(plan.outputDir, 'warmup');
  await freshDir(dir);
  await convert(lib, plan.dpi, plan.input, dir, `${dir}.zip`);
}
say({ ready: true });

for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  const round = /^round (\d+)$/.exec(line.trim())?.[1];
  if (round === undefined) continue;
  // A fresh directory made before the clock starts, as the engine gets a job directory of its own.
  const dir = join(plan.outputDir, round);
  await freshDir(dir);
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  await convert(lib, plan.dpi, plan.input, dir, `${dir}.zip`);
  const ms = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  say({ ms, cpuMs: (cpu.user + cpu.system) / 1000 } satisfies DirectRound);
}
