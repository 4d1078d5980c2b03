import { createHash } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { ApiError } from '../errors/api-error.ts';
import type { FieldProblem } from '../formats/options.ts';
import { splitSecretOptions, validateOptions } from '../formats/options.ts';
import type { FormatRegistry } from '../formats/registry.ts';
import type { ConversionPair } from '../engines/pairs.ts';
import type { ConversionOptions } from '../model/conversion.ts';
import { cleanFileName, extensionOf } from '../inputs/file-name.ts';
import { nameFromUrl } from '../inputs/url-name.ts';
import { looksLikeTable, sniffContent } from '../inputs/sniff.ts';
import { spooledPath, type SpooledFile } from './spooled-file.ts';
import type { ZipMergeOutcome } from '../inputs/zip-merge.ts';
import { checkCallbackUrl } from '../webhooks/callback-url.ts';

/**
 * The raw conversion request, as any face received it (strings from forms, typed
 * values from JSON). Everything is checked here, so HTTP and in-process callers share the rules.
 */
export interface CreateRequestInput {
  fields: Record<string, unknown>;
  options: Record<string, unknown>;
  files: SpooledFile[];
  idempotencyKey?: string | undefined;
}

/** One file of a merge: its name as sent, and the format it was read as. */
export interface MergeInput {
  file: SpooledFile;
  name: string;
  source: string;
}

/** A file sent beside the input and named by an option (`watermark_image`): drawn, not converted. */
export interface MarkImageInput {
  option: string;
  file: SpooledFile;
  name: string;
  /** png, jpg, webp, gif or tiff, as its content says. */
  format: string;
}

export interface ValidCreateRequest {
  pair: ConversionPair;
  /**
   * Several files merged into one PDF, in the order they are merged (the first is `input`'s);
   * with mark images, the one input as well (they are stored together).
   */
  merge?: MergeInput[];
  /** Images named by options, drawn on the result. */
  markImages?: MarkImageInput[];
  variant: string | null;
  /** The options shown with the conversion. */
  options: ConversionOptions;
  /** Secret options (a password): for the engine only, never shown, dropped at the end. */
  secretOptions: ConversionOptions;
  input: { kind: 'file'; file: SpooledFile } | { kind: 'url'; url: string };
  originalName: string;
  callbackUrl: string | null;
  wait: number;
  idempotencyKey: string | null;
  fingerprint: string;
}

export interface RequestRules {
  /** The test-only switch that allows http (and private) callback URLs. */
  allowInsecureCallbacks: boolean;
  /**
   * A zip sent to target pdf: its files unpacked into the spool to be merged, or `page` (it holds
   * an index.html: the HTML engine's). Unset: a zip is always a page.
   */
  unpackZip?: (path: string) => Promise<ZipMergeOutcome>;
}

/** Request fields; any other name in a request is a flat option (`quality=80`). */
export const REQUEST_FIELDS: ReadonlySet<string> = new Set(['target', 'source', 'url', 'filename', 'variant', 'options', 'callback_url', 'wait', 'file']);
const MAX_IDEMPOTENCY_KEY = 64;
/** The most files one request merges. */
export const MAX_MERGE_INPUTS = 50;
/** A zip sent to be merged: its files, and what they may unpack to (a zip bomb stops there). */
export const ZIP_MERGE_LIMITS = { maxFiles: MAX_MERGE_INPUTS, maxBytes: 512 * 1024 * 1024 } as const;
/** The target that takes several files: they are merged into one PDF. */
const MERGE_TARGET = 'pdf';

export function validationError(problems: Record<string, FieldProblem>, hint?: string): ApiError {
  return new ApiError('validation_failed', {
    details: { fields: problems },
    params: hint ? { hint: ` ${hint}` } : {},
  });
}

export function fieldError(name: string, text: string): ApiError {
  return validationError({ [name]: { reason: 'invalid_value', params: { text } } });
}

function parseHttpUrl(value: string): URL | undefined {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname ? url : undefined;
  } catch {
    return undefined;
  }
}

function optionalString(fields: Record<string, unknown>, name: string, problems: Record<string, FieldProblem>): string | undefined {
  const value = fields[name];
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') {
    problems[name] = { reason: 'invalid_type', params: { expected: 'string' } };
    return undefined;
  }
  return value;
}

/**
 * Checks a create request against the spec and the registry: the fields, exactly one input, the
 * source (field, file name, URL path, then content sniffing), the pair, the variant and the options.
 */
export async function validateCreateRequest(
  input: CreateRequestInput,
  registry: FormatRegistry,
  rules: RequestRules,
): Promise<ValidCreateRequest> {
  const { fields } = input;
  const problems: Record<string, FieldProblem> = {};
  // Files an option names (watermark_image=logo.png) are drawn on the result: the rest are the input.
  const markFiles = namedFiles(input, registry.fileOptions(), problems);
  const files = input.files.filter((file) => !markFiles.some((mark) => mark.file === file));

  const target = optionalString(fields, 'target', problems);
  if (target === undefined && !problems.target) problems.target = { reason: 'required', params: {} };
  const sourceField = optionalString(fields, 'source', problems);
  const urlField = optionalString(fields, 'url', problems);
  const filenameField = optionalString(fields, 'filename', problems);
  const variantField = optionalString(fields, 'variant', problems);
  const callbackField = optionalString(fields, 'callback_url', problems);

  const targetKey = target === undefined ? undefined : registry.normalize(target) ?? target.toLowerCase();
  if (files.length > 1 && targetKey !== MERGE_TARGET) {
    problems.file = { reason: 'invalid_value', params: { text: 'one file per request, except for a merge of several into one PDF (target pdf)' } };
  } else if (files.length > MAX_MERGE_INPUTS) {
    problems.file = { reason: 'invalid_value', params: { text: `at most ${MAX_MERGE_INPUTS} files are merged in one request` } };
  } else if (files.length > 1 && sourceField !== undefined) {
    problems.source = { reason: 'invalid_value', params: { text: 'not with several files: each is read as its name and content say' } };
  }
  if (files.length === 1 && urlField !== undefined) problems.url = { reason: 'conflict', params: {} };
  if (files.length === 0 && urlField === undefined && !problems.url) problems.file = { reason: 'conflict', params: {} };

  let url: URL | undefined;
  if (urlField !== undefined && files.length === 0) {
    url = parseHttpUrl(urlField);
    if (!url) problems.url = { reason: 'invalid_url', params: {} };
  }

  let callbackUrl: string | null = null;
  if (callbackField !== undefined) {
    const problem = parseHttpUrl(callbackField) ? checkCallbackUrl(callbackField, { allowInsecure: rules.allowInsecureCallbacks }) : 'invalid_url';
    if (problem === 'invalid_url') problems.callback_url = { reason: 'invalid_url', params: {} };
    else if (problem === 'https_required') problems.callback_url = { reason: 'https_only', params: {} };
    else callbackUrl = new URL(callbackField).toString();
  }

  let wait = 0;
  const rawWait = fields.wait;
  if (rawWait !== undefined && rawWait !== null && rawWait !== '') {
    const parsed = typeof rawWait === 'number' ? rawWait : typeof rawWait === 'string' && /^\s*-?\d+\s*$/.test(rawWait) ? Number(rawWait) : NaN;
    if (!Number.isInteger(parsed)) problems.wait = { reason: 'invalid_type', params: { expected: 'integer' } };
    else if (parsed < 0 || parsed > 30) problems.wait = { reason: 'out_of_range', params: { min: 0, max: 30 } };
    else wait = parsed;
  }

  const key = input.idempotencyKey;
  if (key !== undefined && key.length > MAX_IDEMPOTENCY_KEY) {
    problems['Idempotency-Key'] = { reason: 'too_long', params: { max: MAX_IDEMPOTENCY_KEY } };
  } else if (key !== undefined && key.trim().length === 0) {
    problems['Idempotency-Key'] = { reason: 'invalid_value', params: { text: 'must not be empty' } };
  }

  if (markFiles.length > 0 && files.length === 0 && url !== undefined) {
    problems[`options.${markFiles[0]!.option}`] = { reason: 'invalid_value', params: { text: 'an image is drawn on a PDF sent as a file part, not on one fetched from a URL' } };
  }
  if (Object.keys(problems).length > 0) throw validationError(problems);
  const markImages = await checkMarkImages(markFiles, registry);

  const file = files[0];
  const originalName = file
    ? cleanFileName(file.filename, 'upload')
    : cleanFileName(filenameField ?? nameFromUrl(url!.toString()), 'download');

  let merge = files.length > 1 ? await mergeInputs(files, registry, input.options) : undefined;
  let { source, named } = merge ? { source: MERGE_TARGET as string | undefined, named: undefined as string | undefined } : await resolveSource(registry, sourceField, originalName, url, file);
  // A zip named as a zip: one whose name says a document (a damaged docx) is that document's failure, not files to merge.
  if (!merge && file && source === 'zip' && named === undefined && targetKey === MERGE_TARGET && rules.unpackZip) {
    merge = await zipMerge(file, originalName, registry, input.options, rules.unpackZip);
    if (merge) ({ source, named } = { source: MERGE_TARGET, named: undefined });
  }
  // From here on a refusal removes what a zip unpacked: nothing else would.
  const unpacked = merge && files.length === 1 ? merge.map((one) => one.file.path) : [];
  try {
    if (!source) {
      throw validationError(
        { source: { reason: 'required', params: {} } },
        'The source format could not be determined from the file name, URL or content; send `source`.',
      );
    }
    const pair = registry.pair(source, targetKey!);
    if (!pair) {
      throw new ApiError('unsupported_conversion', {
        params: { source, target: targetKey!, ...(named ? { named } : {}) },
        ...(named ? { details: { source, target: targetKey!, named } } : {}),
      });
    }

    let variant: string | null = null;
    if (variantField !== undefined) {
      if (!pair.variants.some((v) => v.key === variantField)) {
        const values = pair.variants.map((v) => v.key).join(', ') || '-';
        throw validationError({ variant: { reason: 'not_allowed', params: { values } } });
      }
      variant = variantField;
    } else if (pair.variants.length > 0) {
      variant = pair.variants[0]!.key;
    }

    const outcome = validateOptions(pair, input.options);
    if (!outcome.ok) throw validationError(outcome.problems);
    // A step an option adds (OCR) reads one file: a merge's files are joined after their own conversions.
    if (merge && pair.withOption && outcome.options[pair.withOption.option] === true) {
      throw fieldError(`options.${pair.withOption.option}`, `it reads one file, not ${merge.length} merged: merge them first, then convert the merged PDF with ${pair.withOption.option}=true`);
    }
    // The step runs first, before the password opens the file: OCR reads no encrypted PDF.
    if (pair.withOption && outcome.options[pair.withOption.option] === true && outcome.options.password !== undefined && pair.withOption.pair.steps?.[0]?.options.every((option) => option.name !== 'password')) {
      throw fieldError('options.password', `${pair.withOption.option}=true reads PDFs without a password: remove the password first (pdf -> pdf with password), then convert that PDF with ${pair.withOption.option}=true`);
    }
    if (markImages.length > 0 && pair.withOption && outcome.options[pair.withOption.option] === true) {
      throw fieldError(`options.${markImages[0]!.option}`, `not with ${pair.withOption.option}=true: convert with ${pair.withOption.option}=true first, then draw the image on that PDF`);
    }
    // An image is stored with its input in one bundle, as a merge's files are.
    if (markImages.length > 0 && !merge && file) merge = [{ file, name: originalName, source: pair.source }];
    const { shown, secret } = splitSecretOptions(pair, outcome.options);

    const fingerprint = createHash('sha256')
      .update(JSON.stringify({
        source, target: pair.target, variant, options: outcome.options, callbackUrl,
        input: merge
          ? merge.map((one) => ({ sha256: one.file.sha256, name: one.name }))
          : file ? { sha256: file.sha256, name: originalName } : { url: url!.toString(), name: originalName },
        ...(markImages.length > 0 ? { markImages: markImages.map((one) => ({ option: one.option, sha256: one.file.sha256, name: one.name })) } : {}),
      }))
      .digest('hex');

    return {
      // With an option that adds a step (OCR), the chain that runs: its kind is what is charged.
      pair: registry.pairFor(source, pair.target, outcome.options) ?? pair,
      ...(merge ? { merge } : {}),
      ...(markImages.length > 0 ? { markImages } : {}),
      variant,
      options: shown,
      secretOptions: secret,
      input: file ? { kind: 'file', file: merge?.[0]?.file ?? file } : { kind: 'url', url: url!.toString() },
      // A zip's merge is named after the zip; several files after the first.
      originalName: merge && files.length > 1 ? merge[0]!.name : originalName,
      callbackUrl,
      wait,
      idempotencyKey: key ?? null,
      fingerprint,
    };
  } catch (error) {
    await Promise.all(unpacked.map((path) => rm(path, { force: true })));
    throw error;
  }
}

/** The formats an image mark may be sent in. */
const MARK_IMAGE_FORMATS: ReadonlySet<string> = new Set(['png', 'jpg', 'webp', 'gif', 'tiff']);

/**
 * The files the request's file options name (`watermark_image=logo.png` names the part whose
 * file name is logo.png), each taken by one option; a name no part or several parts carry is
 * the option's problem.
 */
function namedFiles(input: CreateRequestInput, fileOptions: ReadonlySet<string>, problems: Record<string, FieldProblem>): { option: string; file: SpooledFile; name: string }[] {
  const found: { option: string; file: SpooledFile; name: string }[] = [];
  for (const option of fileOptions) {
    const value = input.options[option];
    if (typeof value !== 'string' || value === '') continue;
    const name = cleanFileName(value, value);
    const carriers = input.files.filter((file, index) => cleanFileName(file.filename, `upload-${index + 1}`) === name);
    if (carriers.length === 1 && !found.some((one) => one.file === carriers[0])) found.push({ option, file: carriers[0]!, name });
    else {
      const text = carriers.length === 0
        ? `no file named ${name} was sent: send the image as another file part with that file name`
        : carriers.length > 1 ? `${carriers.length} files are named ${name}: give the image a name of its own` : `${name} is named by another option too`;
      problems[`options.${option}`] = { reason: 'invalid_value', params: { text } };
    }
  }
  return found;
}

/** Each named file is an image of a format the marks draw, as its content says. */
async function checkMarkImages(named: readonly { option: string; file: SpooledFile; name: string }[], registry: FormatRegistry): Promise<MarkImageInput[]> {
  const images: MarkImageInput[] = [];
  for (const one of named) {
    const sniffed = (await sniffContent(one.file)).format;
    // file-type's names (tif) as the registry's (tiff).
    const format = sniffed === undefined ? undefined : registry.normalize(sniffed) ?? sniffed;
    if (format === undefined || !MARK_IMAGE_FORMATS.has(format)) throw fieldError(`options.${one.option}`, `${one.name} is not a PNG, JPEG, WebP, GIF or TIFF image${sniffed ? ` (it is ${sniffed})` : ''}`);
    images.push({ ...one, format });
  }
  return images;
}

/** The source format, and what the file's name said where its content said otherwise. */
interface ResolvedSource {
  source: string | undefined;
  /** The name's extension, when the content decided against it. */
  named?: string;
}

/**
 * The source: the `source` field, else the file's content where it has a signature (a PDF, a
 * PNG, an MPEG-TS: file-type's magic numbers) that names a format the registry knows, or that the
 * name does not name at all; else the file name, the URL path, the content. A PDF named .png is
 * converted as the PDF it is, and the conversion's `source` says so. Text formats have no
 * signature; of them only a .json file that is plainly no JSON but a table is taken as CSV.
 */
async function resolveSource(
  registry: FormatRegistry,
  sourceField: string | undefined,
  originalName: string,
  url: URL | undefined,
  file: SpooledFile | undefined,
): Promise<ResolvedSource> {
  if (sourceField) return { source: registry.normalize(sourceField) ?? sourceField.toLowerCase() };
  const extension = extensionOf(originalName)?.toLowerCase();
  const fromName = extension ? registry.normalize(extension) : undefined;
  if (file) {
    const sniffed = await sniffContent(file, fromName);
    const sniffedFormat = sniffed.format ?? (fromName === 'json' && looksLikeTable(sniffed.text()) ? 'csv' : undefined);
    const known = sniffedFormat ? registry.normalize(sniffedFormat) : undefined;
    const content = known ?? sniffedFormat;
    if (content && content !== fromName && (known || (extension && !fromName))) {
      // The name is told beside the content only where it says something else: a .7z that is
      // a 7z is refused as a 7z, not as a 7z "whose name says .7z".
      return { source: content, ...(extension && extension !== content ? { named: extension } : {}) };
    }
    if (fromName) return { source: fromName };
    if (content) return { source: content };
    return { source: extension };
  }
  if (fromName) return { source: fromName };
  if (url) {
    const fromPath = extensionOf(nameFromUrl(url.toString()));
    const source = fromPath ? registry.normalize(fromPath) : undefined;
    if (source) return { source };
  }
  return { source: extension };
}

/**
 * The files of a merge, each read as its name and content say, each a format that converts to
 * PDF (or a PDF), in the order sent, or by name when `merge_order` says so.
 */
async function mergeInputs(files: SpooledFile[], registry: FormatRegistry, options: Record<string, unknown>, ordered = false): Promise<MergeInput[]> {
  const inputs: MergeInput[] = [];
  for (const [index, file] of files.entries()) {
    const name = cleanFileName(file.filename, `upload-${index + 1}`);
    const { source, named } = await resolveSource(registry, undefined, name, undefined, file);
    if (!source) {
      throw validationError({ file: { reason: 'invalid_value', params: { text: `the format of ${name} could not be told from its name or content` } } });
    }
    if (source !== MERGE_TARGET && !registry.pair(source, MERGE_TARGET)) {
      throw new ApiError('unsupported_conversion', {
        params: { source, target: MERGE_TARGET, ...(named ? { named } : {}) },
        details: { source, target: MERGE_TARGET, file: name, ...(named ? { named } : {}) },
      });
    }
    inputs.push({ file, name, source });
  }
  if (options.merge_order === 'name' && !ordered) inputs.sort((a, b) => a.name.localeCompare(b.name, 'en', { numeric: true }));
  return inputs;
}

/**
 * A zip sent to be merged: its files, each read as any merge's file is; undefined when it is a
 * web page (an index.html) for the HTML engine. What it unpacked is removed again when the
 * request is refused.
 */
async function zipMerge(zip: SpooledFile, zipName: string, registry: FormatRegistry, options: Record<string, unknown>, unpack: NonNullable<RequestRules['unpackZip']>): Promise<MergeInput[] | undefined> {
  const outcome = await unpack(await spooledPath(zip));
  if (outcome.kind === 'page') return undefined;
  if (outcome.kind === 'refused') throw validationError({ file: { reason: 'invalid_value', params: { text: `${zipName}: ${outcome.reason}` } } });
  const files: SpooledFile[] = outcome.files.map((file, index) => ({ path: file.path, size: file.size, sha256: `${zip.sha256}:${index}`, filename: file.name }));
  try {
    // In the order of the names with their folders (unpackZipForMerge sorted them), whatever merge_order says.
    return await mergeInputs(files, registry, options, true);
  } catch (error) {
    for (const file of files) await rm(file.path, { force: true });
    throw error;
  }
}
