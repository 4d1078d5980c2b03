/**
 * PDFium (Chrome's PDF engine) compiled to WebAssembly, from the npm package @embedpdf/pdfium:
 * loaded once per process, documents read from their file on demand (FPDF_LoadCustomDocument), so
 * opening a PDF reads its cross-reference table and only the objects a page needs, never the
 * whole file into memory, and never the other pages.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { WrappedPdfiumModule } from '@embedpdf/pdfium';
import { ConversionFailure } from '../../errors/api-error.ts';

/** FPDF_ERR_* of PDFium's fpdfview.h: why FPDF_LoadCustomDocument returned no document. */
const ERR_FILE = 2;
const ERR_FORMAT = 3;
const ERR_PASSWORD = 4;
const ERR_SECURITY = 5;
const ERR_PAGE = 6;
/** FPDFBitmap_BGR: 3 bytes a pixel, which FPDF_REVERSE_BYTE_ORDER makes R, G, B. */
const BITMAP_BGR = 2;
const FPDF_ANNOT = 0x01;
const FPDF_REVERSE_BYTE_ORDER = 0x10;
const WHITE = 0xffffffff;
/** FPDF_FILEACCESS's m_FileLen is an unsigned long: 32 bits in WebAssembly. */
export const MAX_PDF_BYTES = 2 ** 32 - 1;
/** PDF readers look for the header in the first 1024 bytes (PDF 32000-1, annex H). */
const HEADER_WINDOW = 1024;

/**
 * What this module uses of the Emscripten runtime. The package types it through
 * `@types/emscripten`, which is not a dependency here, so it is written out.
 */
interface Runtime {
  /** The current view of the heap: replaced when the heap grows, so read it after allocating. */
  HEAPU8: Uint8Array;
  wasmExports: { malloc(size: number): number; free(pointer: number): void };
  addFunction(fn: (...args: number[]) => number, signature: string): number;
  setValue(pointer: number, value: number, type: 'i32'): void;
}

/** Reads PDFium asked for while a document was open: how much of the file it touched. */
export interface ReadStats {
  reads: number;
  bytes: number;
}

interface Reader extends ReadStats {
  fd: number;
  failure?: unknown;
}

/** A rendered page: `pixels` (RGB, rows packed) lives in PDFium's heap until `free()`. */
export interface Bitmap {
  width: number;
  height: number;
  pixels: Uint8Array;
  free(): void;
}

export interface PdfPage {
  /** Size in points (1/72 inch) as shown: the crop box, turned by the page's /Rotate. */
  width: number;
  height: number;
  /** RGB pixels of the page scaled to `width` x `height` pixels, on white. */
  render(width: number, height: number): Bitmap;
  close(): void;
}

function invalid(message: string): ConversionFailure {
  return new ConversionFailure('input_invalid', message);
}

let instance: Promise<Pdfium> | undefined;
let loaded: Pdfium | undefined;

/**
 * The process's PDFium, loaded with the first call (the 4.6 MB WebAssembly module compiles in
 * about 30 ms) and kept for the next conversions. A load that failed is tried again next time.
 */
export function loadPdfium(): Promise<Pdfium> {
  if (!instance) {
    const attempt = Pdfium.create().then((pdfium) => (loaded = pdfium));
    instance = attempt;
    attempt.catch(() => {
      if (instance === attempt) instance = undefined;
    });
  }
  return instance;
}

/** The package's version and where its WebAssembly module is, without loading either. */
export function pdfiumPackage(): { version: string; wasmPath: string } {
  const require = createRequire(import.meta.url);
  // The package's exports do not include its package.json: it sits two levels above dist/index.cjs.
  const entry = require.resolve('@embedpdf/pdfium');
  const manifest = require(join(dirname(entry), '..', 'package.json')) as { name: string; version: string };
  if (manifest.name !== '@embedpdf/pdfium') throw new Error(`unexpected package layout of @embedpdf/pdfium (found ${manifest.name})`);
  return { version: manifest.version, wasmPath: require.resolve('@embedpdf/pdfium/pdfium.wasm') };
}

/** FPDF_FILEACCESS.m_GetBlock: 1 when all of `size` bytes at `position` were read into the heap at `buffer`. */
function readBlock(runtime: Runtime, reader: Reader | undefined, position: number, buffer: number, size: number): number {
  if (!reader) return 0;
  try {
    reader.reads++;
    reader.bytes += size;
    let done = 0;
    while (done < size) {
      // The heap view is read here, not kept: it is replaced when the heap grows.
      const count = readSync(reader.fd, runtime.HEAPU8, buffer + done, size - done, position + done);
      if (count === 0) return 0;
      done += count;
    }
    return 1;
  } catch (error) {
    // Thrown through WebAssembly it would trap: kept, and thrown once PDFium has returned.
    reader.failure = error;
    return 0;
  }
}

export class Pdfium {
  private nextId = 1;
  private tail: Promise<void> = Promise.resolve();

  private constructor(
    private readonly lib: WrappedPdfiumModule,
    private readonly runtime: Runtime,
    /** Documents open, by the id PDFium passes back to the read callback (m_Param). */
    private readonly readers: Map<number, Reader>,
    /** Index of the read callback in the WebAssembly function table. */
    private readonly getBlock: number,
    /** The last lines PDFium printed (it rarely does), for the message of a crash. */
    private readonly printed: string[],
  ) {}

  static async create(): Promise<Pdfium> {
    const { wasmPath } = pdfiumPackage();
    const [wasmBinary, { init }] = await Promise.all([readFile(wasmPath), import('@embedpdf/pdfium')]);
    const printed: string[] = [];
    // Nothing reaches stdout: an in-process `conv … -o -` writes its result there.
    const keep = (line: string): void => {
      printed.push(line);
      if (printed.length > 10) printed.shift();
    };
    const lib = await init({ wasmBinary, print: keep, printErr: keep });
    lib.PDFiumExt_Init();
    const runtime = lib.pdfium as unknown as Runtime;
    const readers = new Map<number, Reader>();
    // int m_GetBlock(void* param, unsigned long position, unsigned char* pBuf, unsigned long size)
    const getBlock = runtime.addFunction(
      (param, position, buffer, size) => readBlock(runtime, readers.get(param), position >>> 0, buffer, size >>> 0),
      'iiiii',
    );
    return new Pdfium(lib, runtime, readers, getBlock, printed);
  }

  /**
   * Runs `work` alone. PDFium is not reentrant, and a bitmap handed to sharp lives in PDFium's
   * heap, which must not grow (and move) while sharp reads it. A WebAssembly trap leaves PDFium's
   * state undefined: this instance is dropped and the next conversion loads a fresh one.
   */
  exclusive<T>(work: () => Promise<T>): Promise<T> {
    const result = this.tail.then(work).catch((error: unknown) => {
      // WebAssembly.RuntimeError: a trap, or Emscripten's abort() (this project's TypeScript lib has no WebAssembly types).
      if (error instanceof Error && error.name === 'RuntimeError') {
        if (loaded === this) {
          loaded = undefined;
          instance = undefined;
        }
        const printed = this.printed.length > 0 ? ` (${this.printed.at(-1)})` : '';
        throw new ConversionFailure('conversion_failed', `PDFium failed on this file: ${error.message}${printed}`);
      }
      throw error;
    });
    this.tail = result.then(() => undefined, () => undefined);
    return result;
  }

  /** Opens the PDF at `path`; failures that are the file's are ConversionFailure('input_invalid'). */
  open(path: string): PdfDocument {
    const fd = openSync(path, 'r');
    let access = 0;
    let id = 0;
    try {
      const size = fstatSync(fd).size;
      if (size > MAX_PDF_BYTES) {
        throw new ConversionFailure('file_too_large', 'The PDF is larger than 4 GiB, the most the PDF renderer reads.');
      }
      const head = Buffer.alloc(Math.min(HEADER_WINDOW, size));
      readSync(fd, head, 0, head.length, 0);
      if (!head.includes('%PDF-')) throw invalid('The input is not a PDF: it has no "%PDF-" header.');
      id = this.nextId++;
      const reader: Reader = { fd, reads: 0, bytes: 0 };
      this.readers.set(id, reader);
      // FPDF_FILEACCESS: { unsigned long m_FileLen; m_GetBlock; void* m_Param }, 4 bytes each.
      const { wasmExports, setValue } = this.runtime;
      access = wasmExports.malloc(12);
      setValue(access, size, 'i32');
      setValue(access + 4, this.getBlock, 'i32');
      setValue(access + 8, id, 'i32');
      const handle = this.lib.FPDF_LoadCustomDocument(access, '');
      if (reader.failure) throw reader.failure;
      if (!handle) throw this.openFailure(this.lib.FPDF_GetLastError());
      if (!this.lib.FPDF_DocumentHasValidCrossReferenceTable(handle)) {
        this.lib.FPDF_CloseDocument(handle);
        throw invalid('The PDF is damaged: its cross-reference table is missing or wrong (a file cut short, or changed after it was written).');
      }
      return new PdfDocument(this.lib, handle, reader, () => {
        this.readers.delete(id);
        closeSync(fd);
        wasmExports.free(access);
      });
    } catch (error) {
      if (id) this.readers.delete(id);
      if (access) this.runtime.wasmExports.free(access);
      closeSync(fd);
      throw error;
    }
  }

  private openFailure(code: number): Error {
    switch (code) {
      case ERR_PASSWORD:
        return invalid('The PDF is encrypted with a password: convert a copy saved without one.');
      case ERR_SECURITY:
        return invalid('The PDF is encrypted with a security handler PDFium does not support.');
      case ERR_FORMAT:
        return invalid('The PDF is damaged: it cannot be parsed (a file cut short, or not a PDF after its header).');
      case ERR_PAGE:
        return invalid('The PDF is damaged: its page tree cannot be read.');
      case ERR_FILE:
        return new ConversionFailure('conversion_failed', 'The PDF could not be read from disk.');
      default:
        return invalid(`The PDF cannot be opened (PDFium error ${code}).`);
    }
  }
}

/**
 * PDFium gives a hyphen that ends a line as U+FFFE (a noncharacter) in place of the hyphen and the
 * line break: "manip\uFFFEulation". It is written back as printed, a hyphen and a new line; which
 * hyphens only split a word ("manip-ulation") and which belong to it ("well-known") the text does
 * not tell (poppler's pdftotext joins both, and "End-" with the next line's "Two").
 */
const LINE_END_HYPHEN = /\uFFFE/g;

export class PdfDocument {
  readonly pageCount: number;
  private closed = false;

  private readonly runtime: Runtime;

  constructor(
    private readonly lib: WrappedPdfiumModule,
    private readonly handle: number,
    private readonly reader: Reader,
    private readonly release: () => void,
  ) {
    this.runtime = lib.pdfium as unknown as Runtime;
    try {
      // The page tree's /Count: no page is read for it.
      this.pageCount = lib.FPDF_GetPageCount(handle);
    } catch (error) {
      this.close();
      throw error;
    }
  }

  /** How much of the file PDFium has read so far. */
  stats(): ReadStats {
    return { reads: this.reader.reads, bytes: this.reader.bytes };
  }

  /** Page `index` (0-based), parsed but not yet drawn. */
  page(index: number): PdfPage {
    const { lib, runtime } = this;
    const page = lib.FPDF_LoadPage(this.handle, index);
    this.throwIfReadFailed();
    if (!page) throw invalid(`The PDF is damaged: page ${index + 1} cannot be read.`);
    const width = lib.FPDF_GetPageWidthF(page);
    const height = lib.FPDF_GetPageHeightF(page);
    if (!(width > 0 && height > 0)) {
      lib.FPDF_ClosePage(page);
      throw invalid(`Page ${index + 1} of the PDF has no area (${width} x ${height} points).`);
    }
    let open = true;
    return {
      width,
      height,
      render: (pixelWidth: number, pixelHeight: number): Bitmap => {
        const stride = pixelWidth * 3;
        const length = stride * pixelHeight;
        const pointer = runtime.wasmExports.malloc(length);
        if (!pointer) {
          throw new ConversionFailure('memory_limit', `A ${pixelWidth} x ${pixelHeight} page does not fit in PDFium's memory (2 GiB at most).`);
        }
        let freed = false;
        const free = (): void => {
          if (!freed) runtime.wasmExports.free(pointer);
          freed = true;
        };
        try {
          const bitmap = lib.FPDFBitmap_CreateEx(pixelWidth, pixelHeight, BITMAP_BGR, pointer, stride);
          if (!bitmap) throw new Error(`PDFium could not make a ${pixelWidth} x ${pixelHeight} bitmap`);
          lib.FPDFBitmap_FillRect(bitmap, 0, 0, pixelWidth, pixelHeight, WHITE);
          lib.FPDF_RenderPageBitmap(bitmap, page, 0, 0, pixelWidth, pixelHeight, 0, FPDF_ANNOT | FPDF_REVERSE_BYTE_ORDER);
          lib.FPDFBitmap_Destroy(bitmap); // the pixels are ours: an external buffer stays
          this.throwIfReadFailed();
        } catch (error) {
          free();
          throw error;
        }
        return { width: pixelWidth, height: pixelHeight, pixels: runtime.HEAPU8.subarray(pointer, pointer + length), free };
      },
      close: () => {
        if (open) lib.FPDF_ClosePage(page);
        open = false;
      },
    };
  }

  /** The text of page `index` (0-based) as PDFium extracts it, lines ended by CR LF. */
  text(index: number): string {
    const { lib, runtime } = this;
    const page = lib.FPDF_LoadPage(this.handle, index);
    this.throwIfReadFailed();
    if (!page) throw invalid(`The PDF is damaged: page ${index + 1} cannot be read.`);
    const textPage = lib.FPDFText_LoadPage(page);
    try {
      if (!textPage) throw invalid(`The text of page ${index + 1} cannot be read.`);
      const count = lib.FPDFText_CountChars(textPage);
      if (count <= 0) return '';
      const pointer = runtime.wasmExports.malloc((count + 1) * 2);
      try {
        // UTF-16 code units written, the terminating NUL included.
        const written = lib.FPDFText_GetText(textPage, 0, count, pointer);
        if (written <= 1) return '';
        return Buffer.from(runtime.HEAPU8.buffer, pointer, (written - 1) * 2).toString('utf16le').replace(LINE_END_HYPHEN, '-\n');
      } finally {
        runtime.wasmExports.free(pointer);
      }
    } finally {
      if (textPage) lib.FPDFText_ClosePage(textPage);
      lib.FPDF_ClosePage(page);
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    try {
      this.lib.FPDF_CloseDocument(this.handle);
    } finally {
      // The file is closed even when PDFium trapped (its instance is then dropped whole).
      this.release();
    }
  }

  private throwIfReadFailed(): void {
    if (this.reader.failure) throw this.reader.failure;
  }
}
