import type { ConversionStatus } from './status.ts';

export type OptionValue = string | number | boolean;
export type ConversionOptions = Record<string, OptionValue>;

export interface ConversionError {
  code: string;
  message: string;
  /** Figures behind the message, where there are any (an extension of the interface's error object). */
  details?: Record<string, number | string>;
}

/**
 * Something a client should know of a conversion that succeeded (an extension of the interface):
 * `font_substituted`, a font the document names that is not installed and has no metric-compatible
 * face, so its text was set in `used` and lines and pages may break elsewhere; `metadata_dropped`,
 * a field of the document information the target could not keep; `content_left_out`, a file the
 * document includes or an image it shows by path or address (`reference`), which is not read.
 */
export type ConversionWarning =
  | { code: 'font_substituted'; font: string; used: string; message: string }
  | { code: 'metadata_dropped'; field: string; message: string }
  | { code: 'content_left_out'; reference: string; message: string };

export interface ConversionResult {
  filename: string;
  size: number;
  mime: string;
  expires_at: string;
}

/** One file of a merge, as the conversion shows it. */
export interface ConversionInputFile {
  name: string;
  size: number;
  format: string;
}

/** An image drawn on the result, as the record keeps it. */
export interface MarkImageFile extends ConversionInputFile {
  /** The option that names it (`watermark_image`). */
  option: string;
}

/** Where the input comes from. A file input is already spooled into the blob store at submission. */
export type ConversionInput =
  | { kind: 'file'; sha256: string }
  | { kind: 'url'; url: string };

/** The stored record. The public object is derived from it by `toPublicConversion`. */
export interface ConversionRecord {
  id: string;
  account_id: string;
  status: ConversionStatus;
  source: string;
  target: string;
  variant: string | null;
  options: ConversionOptions;
  /** Secret options (a document's password): given to the engine, never shown, dropped at the end. */
  secret_options?: ConversionOptions;
  original_name: string;
  input_size: number | null;
  /**
   * The pixels the uploaded file's image header gives (PNG, GIF, JPEG), read from its first bytes
   * at submission; null where the header gives none; absent where they were not at hand (a URL,
   * a merge, a record of an older version). Not shown: the run's heavy-image check reads it.
   */
  input_pixels?: number | null;
  /**
   * The uploaded file itself, base64, where it was small and its engine reads bytes
   * (src/service/engine-input.ts): there is no stored input file then. Dropped when the
   * conversion ends; never shown.
   */
  input_bytes?: string;
  input: ConversionInput;
  /**
   * The files of a merge, in the order they are merged (absent for one input sent as itself; a
   * zip of one file sent to be merged has one): the stored input is then a zip of them (entries
   * 1.docx, 2.png, ...), `input_size` their sum.
   */
  inputs?: ConversionInputFile[];
  /**
   * Images sent beside the input and named by an option (`watermark_image=logo.png`), drawn on
   * the result. With them the stored input is a bundle as a merge's (`inputs` then lists the
   * input, however many), each image in it as `<option>.<format>`. Not shown: the option names it.
   */
  mark_images?: MarkImageFile[];
  progress: number | null;
  /** Credits held while the conversion is active; released (0) when it ends. */
  reserved_credits: number;
  /** Credits charged: set only when it succeeded. */
  credits: number;
  charged_at: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  result: ConversionResult | null;
  /** Set when it succeeded with something to say (absent: none). */
  warnings?: ConversionWarning[];
  /**
   * Milliseconds its engines ran (hand-overs and a chain's steps together), set when it ended
   * whichever way: what it drew on its account's hourly engine time. Not shown. Absent: none.
   */
  engine_ms?: number;
  error: ConversionError | null;
  callback_url: string | null;
  idempotency_key: string | null;
  /** Hash of the request that created it, to tell a replay from a different request with the same key. */
  request_fingerprint: string | null;
  /**
   * Times the service was found to have stopped while running it (a crash, kill -9, power loss;
   * not a graceful stop): it is run once more, then fails with `interrupted`. Absent: 0.
   */
  interruptions?: number;
}

export interface PublicConversion {
  id: string;
  object: 'conversion';
  status: ConversionStatus;
  source: string;
  target: string;
  variant: string | null;
  options: ConversionOptions;
  original_name: string;
  input_size: number | null;
  /** A merge's files (an extension of the interface; absent for one input). */
  inputs?: ConversionInputFile[];
  progress: number | null;
  credits: number;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  result: (ConversionResult & { download_url: string }) | null;
  warnings: ConversionWarning[];
  error: ConversionError | null;
  links: { self: string; download: string };
}

export function toPublicConversion(record: ConversionRecord, baseUrl: string): PublicConversion {
  const self = `${baseUrl}/conversions/${record.id}`;
  const download = `${self}/download`;
  return {
    id: record.id,
    object: 'conversion',
    status: record.status,
    source: record.source,
    target: record.target,
    variant: record.variant,
    options: record.options,
    original_name: record.original_name,
    input_size: record.input_size,
    ...(record.inputs ? { inputs: record.inputs } : {}),
    progress: record.progress,
    credits: record.credits,
    created_at: record.created_at,
    started_at: record.started_at,
    finished_at: record.finished_at,
    result: record.result ? { ...record.result, download_url: download } : null,
    warnings: record.warnings ?? [],
    error: record.error,
    links: { self, download },
  };
}
