import type { HelperLifecycle } from './process/supervisor.ts';
import type { ConversionOptions, ConversionWarning } from '../model/conversion.ts';
import type { ConversionPair, FormatInfo } from './pairs.ts';

/** Everything an engine needs for one job. An engine knows nothing of HTTP, accounts or credits. */
export interface EngineJob {
  inputPath: string;
  /**
   * The name the input goes by where the engine shows one (`<user's name>.<source extension>`),
   * given where `inputPath` is the stored input itself (Engine.namesItsInputOf); unset where the
   * file at `inputPath` has that name already.
   */
  inputName?: string;
  /**
   * What the submission already read of the file at `path`: its size, and the pixels its image
   * header gives (null where it gives none). An engine may decide from these without opening the
   * file; they say nothing of a job whose `inputPath` is another file (a chain's next step).
   */
  inputFacts?: { path: string; size: number; pixels: number | null };
  /**
   * The input itself, where it came in small and whole with the submission and the engine reads
   * bytes of this source (Engine.readsBytesOf): no file is at `inputPath` then (the path only
   * names it in messages). An engine host is given the file instead (catalog.ts writes it).
   */
  inputBytes?: Buffer;
  /**
   * Several inputs, in order (a merge into one PDF: each already a PDF); `inputPath` is the
   * first. Unset for one input.
   */
  inputPaths?: string[];
  /**
   * Files sent beside the input and named by an option (`watermark_image`): option -> path.
   * Drawn on the result, not converted.
   */
  markImages?: Record<string, string>;
  /**
   * A merge's PDFs, in order, as entries of the stored zip at `inputPath` (its pair
   * `readsBundles`): read from it by the engine, not written out as files.
   */
  bundledInputs?: string[];
  /**
   * The engine writes its result here (the caller owns the directory and cleans up); work of its
   * own beside it goes into scratchDirFor(outputPath) (src/engines/scratch.ts) and nowhere else.
   */
  outputPath: string;
  source: string;
  target: string;
  /** The variant key, or null when the pair has no variants. */
  variant: string | null;
  /** Validated options with defaults applied, typed as the descriptors say. */
  options: ConversionOptions;
  /** Aborted on cancel, time-out and shutdown; the engine must stop its work and its subprocesses. */
  signal: AbortSignal;
  /** Progress 0..100; callers rate-limit persistence, so engines may call it often. */
  onProgress: (percent: number) => void;
  /**
   * The most the result may hold, in bytes; undefined: no cap. An engine that writes its output
   * itself stops there with ConversionFailure('conversion_failed') (outputCapFailure); the runner
   * checks the size of every result as well.
   */
  maxOutputBytes?: number;
  /** The most pages the job may render (the plan's max_pages); undefined: the engine's own limit. */
  maxPages?: number;
  /** The most pages the job may read by OCR (the plan's max_ocr_pages); undefined: no cap. */
  maxOcrPages?: number;
  /**
   * Given to an engine that `startsClock`: it calls this when its work begins (its helper
   * process is up and its own), and the time limit runs from then.
   */
  startClock?: () => void;
  /**
   * The job's time limit in ms (the signal aborts at it): for an engine whose work the signal
   * cannot stop (libvips on libuv's threads), to give the library its own timeout.
   */
  timeLimitMs?: number;
  /**
   * For a URL input, the URL its file was fetched from: an engine that renders a web page (the
   * HTML engine) serves the file at that address, so that the page's relative links resolve.
   */
  sourceUrl?: string;
  /**
   * Who the job is for, as an opaque key (the account's id): an engine that keeps state between
   * jobs (the HTML engine's pages reused within one account) never lets one key's state serve another.
   */
  tenant?: string;
  /**
   * Taken on the workers' quick lane (a light account's conversion beside busy workers): a pool
   * gives it one of the helpers it keeps warm for that, rather than starting one.
   */
  quick?: boolean;
  /**
   * In a chain's later step, the format the user sent (`source` is what the step before made
   * of it: an xlsx's CSV): for messages that name the user's file, and to read a step's
   * result as convd's engines write it.
   */
  origin?: string;
  /**
   * In a chain's step before the last, the format the chain ends in (an ods's PDF on its way to
   * txt): what the step makes is read for that, not looked at.
   */
  destination?: string;
}

/** What an engine may tell about its output; the caller finds out itself what is left out. */
export interface EngineOutput {
  /** Bytes written to `outputPath` (saves the caller a stat). */
  size?: number;
  /** What the conversion's record should say of the result (a font set in another). */
  warnings?: ConversionWarning[];
  /**
   * The output is a zip of several results (a split PDF's parts, every page as an image): the
   * result is named and served as a zip, whatever the target.
   */
  archive?: boolean;
}

export interface EngineStatus {
  name: string;
  available: boolean;
  /** Binary path or library name, and its version, for `convd doctor`. */
  binary?: string;
  version?: string;
  detail?: string;
}

/**
 * An engine converts files of the pairs it declares. Failures are thrown as `ConversionFailure`
 * (input_invalid, conversion_failed, timeout, ...); an abort rejects with the signal's reason.
 */
export interface Engine {
  readonly name: string;
  /** Probed once at start-up; an unavailable engine contributes no pairs to the registry. */
  probe(): Promise<EngineStatus>;
  /** Pairs this engine can run, given what `probe` found (e.g. h265 only when the binary has it). */
  pairs(): ConversionPair[];
  /** Formats this engine introduces (extensions and MIME types). */
  formats(): FormatInfo[];
  convert(job: EngineJob): Promise<EngineOutput | void>;
  /**
   * The pages of an input (of format `source`) the engine would read by OCR, counted before any
   * work: a file over the plan's max_ocr_pages is refused at submission. Undefined where it cannot
   * tell (the run checks again).
   */
  pagesOf?(path: string, source: string): Promise<number | undefined>;
  /**
   * At most this many of this engine's conversions run at once, whatever the workers; the others
   * wait their turn (in `processing`, at progress 0) before their time limit starts. Unset: no
   * limit of its own.
   */
  readonly maxConcurrentRuns?: number;
  /**
   * The engine calls EngineJob.startClock when its work begins, after starting or waiting for a
   * helper process; otherwise the time limit runs from the call to `convert`.
   */
  readonly startsClock?: boolean;
  /**
   * Sources the engine reads by their content, whatever the file is called, and that reach no
   * file beside them, and whose output it writes wherever it is told: their runs are handed the
   * stored input itself and an output path of the store's own, without a run directory where the
   * input is linked under the user's name (that name shows in documents, never in an image's
   * pixels). Not a format that references other files by a relative path (an SVG's `<image
   * href>`): beside the stored input are every other conversion's. A pair of several steps, with
   * a fallback or of several inputs still gets the directory.
   */
  readonly readsAnyNameOf?: readonly string[];
  /**
   * The engine's library picks its reader from the file's bytes, whatever the source is said to
   * be (libvips: an SVG sent as `.png` is read by librsvg): a source it reads by any name runs
   * without a directory only where the submission saw the upload's bytes to be of a kind that
   * reaches no other file (a PNG, GIF or JPEG header: `input_pixels`). Unset: the source is read
   * as what it is said to be, or not at all (PDFium reads PDFs).
   */
  readonly picksReaderFromBytes?: boolean;
  /**
   * Sources whose input the engine reads from EngineJob.inputBytes when it is given. A small
   * upload of one of them travels in the conversion's record instead of a file of its own
   * (nothing written, read back and removed); only a source the engine also reads by any name
   * (readsAnyNameOf) is given as bytes.
   */
  readonly readsBytesOf?: readonly string[];
  /**
   * Sources whose input the engine itself puts into a directory of its own that no other run
   * shares, under EngineJob.inputName, and opens from there (the office engine: LibreOffice
   * shows a document's file name, and writes beside its output): their runs are handed the
   * stored input, its name and an output path of the store's, without a run directory of the
   * service's (a directory, a link and its removal saved). A pair of several steps, with a
   * fallback or of several inputs still gets the directory.
   */
  readonly namesItsInputOf?: readonly string[];
  /** Ends what the engine keeps running (helper processes); it converts no more afterwards. */
  close?(): Promise<void>;
}

/** One engine's own settings, plain data: the fields its descriptor's `defaults()` declares. */
export type EngineOwnSettings = Record<string, unknown>;

/** Every engine's own settings, by engine name (each engine's descriptor.ts says what they are). */
export type SettingsByEngine = Record<string, EngineOwnSettings>;

/** The decompression-bomb limit (max_input_pixels) where none is configured: the daemon's default, and an engine's made without settings. */
export const DEFAULT_MAX_INPUT_PIXELS = 100_000_000;

/** What the engines are made with; plain data, so that the engine host gets the same. */
export interface EngineSettings {
  maxInputPixels: number;
  /**
   * Memory of one engine process that is not pooled (libheif's decoder, ffmpeg for still images,
   * Ghostscript), MiB: engine_memory_mb. None when unset.
   */
  processMemoryMb?: number;
  /**
   * Runs an engine takes beyond its own number for the workers' quick lane (WorkerPool): the
   * LibreOffice pool has this many more instances, the engine host this many more processes.
   */
  quickRuns?: number;
  /** The URL inputs' test switch (allow_private_urls), which reaches the resources a web page loads too. */
  allowPrivateUrls?: boolean;
  /** url_allow_networks: private networks those resources may come from all the same. */
  allowedNetworks?: readonly string[];
  /** Each engine's own settings, by name; an engine absent here runs with its built-in defaults. */
  engines?: SettingsByEngine;
  /** Told when a long-running helper of an engine (a LibreOffice instance, a browser) starts or ends. */
  onLifecycle?: (event: HelperLifecycle) => void;
}
