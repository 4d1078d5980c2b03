/**
 * The baseline of the pdf-pages bench, run as a process of its own at the engine host's priority
 * (see bench/pdf-pages.ts): @embedpdf/pdfium called directly, the way its documentation shows (the
 * file read into PDFium's memory, page 1 loaded and rendered), and sharp's PNG encode.
 *
 * argv[2]: a DirectPlan as JSON. Prints `{"ready":true,"loadMs":…}` once PDFium is loaded and
 * warm, then for each line `round <k>` on stdin renders `count` pages into `<outputDir>/<k>/` and
 * prints `{"ms":…,"cpuMs":…}`. Ends when stdin closes.
 */
import { mkdir, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { init, type WrappedPdfiumModule } from '@embedpdf/pdfium';
import sharp from 'sharp';

export interface DirectPlan {
  input: string;
  outputDir: string;
  count: number;
  warmup: number;
  dpi: number;
}

export interface DirectRound {
  ms: number;
  cpuMs: number;
}

/** FPDFBitmap_BGR, which FPDF_REVERSE_BYTE_ORDER (0x10) writes as R, G, B; FPDF_ANNOT (0x01). */
const BITMAP_BGR = 2;
const RENDER_FLAGS = 0x01 | 0x10;

/** What is used of the Emscripten runtime (its types come from @types/emscripten, not installed). */
interface Heap {
  HEAPU8: Uint8Array;
}

function renderer(lib: WrappedPdfiumModule, dpi: number): (input: string, output: string) => Promise<void> {
  const runtime = lib.pdfium;
  const heap = lib.pdfium as unknown as Heap;
  return async (input, output) => {
    const bytes = await readFile(input);
    const file = runtime.wasmExports.malloc(bytes.length);
    heap.HEAPU8.set(bytes, file);
    const document = lib.FPDF_LoadMemDocument(file, bytes.length, '');
    const page = lib.FPDF_LoadPage(document, 0);
    const width = Math.round((lib.FPDF_GetPageWidthF(page) * dpi) / 72);
    const height = Math.round((lib.FPDF_GetPageHeightF(page) * dpi) / 72);
    const pixels = runtime.wasmExports.malloc(width * height * 3);
    const bitmap = lib.FPDFBitmap_CreateEx(width, height, BITMAP_BGR, pixels, width * 3);
    lib.FPDFBitmap_FillRect(bitmap, 0, 0, width, height, 0xffffffff);
    lib.FPDF_RenderPageBitmap(bitmap, page, 0, 0, width, height, 0, RENDER_FLAGS);
    lib.FPDFBitmap_Destroy(bitmap);
    lib.FPDF_ClosePage(page);
    try {
      await sharp(heap.HEAPU8.subarray(pixels, pixels + width * height * 3), { raw: { width, height, channels: 3 } }).png().toFile(output);
    } finally {
      runtime.wasmExports.free(pixels);
      lib.FPDF_CloseDocument(document);
      runtime.wasmExports.free(file);
    }
  };
}

const plan = JSON.parse(process.argv[2]!) as DirectPlan;
const say = (message: object) => process.stdout.write(`${JSON.stringify(message)}\n`);

const loadStarted = performance.now();
const lib = await init({ wasmBinary: await readFile(createRequire(import.meta.url).resolve('@embedpdf/pdfium/pdfium.wasm')) });
lib.PDFiumExt_Init();
const loadMs = performance.now() - loadStarted;
const render = renderer(lib, plan.dpi);
const warmDir = join(plan.outputDir, 'warmup');
await mkdir(warmDir, { recursive: true });
for (let i = 0; i < plan.warmup; i++) await render(plan.input, join(warmDir, `page-${i}.png`));
say({ ready: true, loadMs });

for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  const round = /^round (\d+)$/.exec(line.trim())?.[1];
  if (round === undefined) continue;
  // New files in a fresh directory made before the clock starts, as the service writes them.
  const dir = join(plan.outputDir, round);
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  for (let i = 0; i < plan.count; i++) await render(plan.input, join(dir, `page-${i}.png`));
  const ms = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  say({ ms, cpuMs: (cpu.user + cpu.system) / 1000 } satisfies DirectRound);
}
