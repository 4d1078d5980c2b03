/**
 * Whether a real file's result is right, each read by a tool of its own rather than the engine
 * that wrote it: pictures by libvips and PDFium (real-file-pictures.ts), sounds by ffprobe and
 * ffmpeg's decoder, PDFs by pdf-lib (pages) and pdftotext (text), packages by unzip, data by
 * JSON, YAML and CSV parsers; and a document's words, sampled from its source
 * (real-file-words.ts), found in its result.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { parse as parseCsv } from 'csv-parse/sync';
import { PDFDocument } from 'pdf-lib';
import sharp from 'sharp';
import { parse as parseYaml } from 'yaml';
import { findBinary } from '../../src/engines/media/binaries.ts';
import { documentText } from './document-text.ts';
import { openZip } from './markup.ts';
import { firstPageAspect, imagePdfProblems, pagePictureProblems, pictureProblems, readBmp, readXpm } from './real-file-pictures.ts';
import { missingWords, pdfText, sampleWords, sourceText, withoutTags } from './real-file-words.ts';
import type { Family, RealFile } from './real-files.ts';

const run = promisify(execFile);

/** A result found right (`problems` empty) or wrong, and what was seen either way. */
export interface Verdict {
  problems: string[];
  seen: string;
}

const IMAGE_TARGETS = new Set(['png', 'jpg', 'webp', 'gif', 'bmp', 'tiff', 'avif']);
/** The share of a source's sampled words a result may lack (a heading drawn as a picture, a word a PDF broke oddly). */
const WORDS_MAY_MISS = 0.1;

async function bytesOf(path: string): Promise<Buffer> {
  const raw = await readFile(path);
  return path.endsWith('.gz') ? gunzipSync(raw) : raw;
}

/** The text of a result, by its target, as document-text.ts and unzip read it. */
async function resultText(target: string, output: string): Promise<string> {
  switch (target) {
    case 'pptx': {
      const zip = await openZip(output);
      return withoutTags(await zip.text(...zip.entries.filter((entry) => /^ppt\/slides\/slide\d+\.xml$/.test(entry))));
    }
    case 'xlsx': {
      const zip = await openZip(output);
      return withoutTags(await zip.text(...zip.entries.filter((entry) => entry === 'xl/sharedStrings.xml' || entry.startsWith('xl/worksheets/'))));
    }
    case 'ods':
      return withoutTags(await (await openZip(output)).text('content.xml'));
    case 'pdf':
      return pdfText(output);
    case 'csv':
    case 'json':
    case 'yaml':
    case 'svg':
      return withoutTags(await readFile(output, 'utf8'));
    default:
      return documentText(target, output);
  }
}

/** Pages of a presentation or drawing: `draw:page`s in its body (undefined for other documents). */
async function drawnPages(family: Family, source: string): Promise<number | undefined> {
  if (family !== 'office') return undefined;
  const body = /<office:body>([\s\S]*)<\/office:body>/.exec(await (await openZip(source)).text('content.xml'))?.[1] ?? '';
  return /<office:(presentation|drawing)>/.test(body) ? (body.match(/<draw:page /g) ?? []).length : undefined;
}

function wordsVerdict(sample: string[], text: string, extra: string[] = [], notes: string[] = []): Verdict {
  if (sample.length === 0) return { problems: extra, seen: [...notes, 'no words in the source'].join(', ') };
  const missing = missingWords(sample, text);
  const problems = [...extra];
  if (missing.length > sample.length * WORDS_MAY_MISS) problems.push(`lacks ${missing.length} of ${sample.length} words of the source (${missing.slice(0, 6).join(', ')})`);
  const lacking = missing.length > 0 ? ` (not found: ${missing.join(', ')})` : '';
  return { problems, seen: [...notes, `${sample.length - missing.length}/${sample.length} words${lacking}`].join(', ') };
}

async function documentVerdict(file: RealFile, source: string, target: string, output: string): Promise<Verdict> {
  const bytes = await readFile(output);
  if (IMAGE_TARGETS.has(target)) {
    const aspect = file.family === 'pdf' ? await firstPageAspect(source) : undefined;
    const { width, height } = await sharp(bytes).metadata();
    return { problems: await pagePictureProblems(bytes, aspect), seen: `first page, ${width}x${height}` };
  }
  if (target === 'svg') {
    const { width, height } = await sharp(bytes).metadata();
    return { problems: await pagePictureProblems(await sharp(bytes).png().toBuffer()), seen: `first page, ${width}x${height}` };
  }
  const sample = sampleWords(await sourceText(file.family, source));
  const pages = await drawnPages(file.family, source);
  const problems: string[] = [];
  const notes: string[] = [];
  if (target === 'pdf') {
    const count = (await PDFDocument.load(bytes, { updateMetadata: false })).getPageCount();
    notes.push(`${count} page${count === 1 ? '' : 's'}`);
    if (count < 1 || (pages !== undefined && count !== pages)) problems.push(`${count} pages, the source has ${pages ?? 'at least one'}`);
  }
  if (target === 'pptx') {
    const slides = (await openZip(output)).entries.filter((entry) => /^ppt\/slides\/slide\d+\.xml$/.test(entry)).length;
    notes.push(`${slides} slides`);
    if (slides !== pages) problems.push(`${slides} slides, the source has ${pages}`);
  }
  return wordsVerdict(sample, await resultText(target, output), problems, notes);
}

/** Every key and value of a data file, as text: what a faithful conversion keeps, cell for cell. */
function leaves(value: unknown, into: Set<string>): Set<string> {
  if (Array.isArray(value)) for (const item of value) leaves(item, into);
  else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      into.add(key.trim());
      leaves(item, into);
    }
  } else if (value !== null && value !== undefined && String(value).trim() !== '') into.add(String(value).trim());
  return into;
}

function parsedData(format: string, text: string): unknown {
  if (format === 'json') return JSON.parse(text);
  if (format === 'yaml') return parseYaml(text);
  if (format === 'csv' || format === 'tsv') return parseCsv(text, { delimiter: format === 'tsv' ? '\t' : ',', relax_column_count: true, bom: true });
  throw new Error(`no parser for ${format} data: add one`);
}

async function dataVerdict(source: string, target: string, output: string): Promise<Verdict> {
  const sourceFormat = source.replace(/^.*\./, '');
  const sourceLeaves = leaves(parsedData(sourceFormat, (await bytesOf(source)).toString('utf8')), new Set());
  if (['json', 'yaml', 'csv', 'tsv'].includes(target)) {
    const kept = leaves(parsedData(target, await readFile(output, 'utf8')), new Set());
    const lost = [...sourceLeaves].filter((leaf) => !kept.has(leaf));
    const problems = lost.length > 0 ? [`lacks ${lost.length} of ${sourceLeaves.size} keys and values as ${target} values (${lost.slice(0, 4).join(', ')})`] : [];
    return { problems, seen: `${sourceLeaves.size - lost.length}/${sourceLeaves.size} keys and values` };
  }
  const problems: string[] = [];
  const notes: string[] = [];
  if (target === 'pdf') {
    const count = (await PDFDocument.load(await readFile(output), { updateMetadata: false })).getPageCount();
    notes.push(`${count} page${count === 1 ? '' : 's'}`);
  }
  // Every word of the data, not a sample: a table's cells are few and each one counts.
  const words = sampleWords([...sourceLeaves].join('\n'), Number.MAX_SAFE_INTEGER);
  const text = await resultText(target, output);
  const missing = missingWords(words, text);
  if (missing.length > 0) problems.push(`lacks ${missing.length} of ${words.length} words of the data (${missing.slice(0, 6).join(', ')})`);
  return { problems, seen: [...notes, `${words.length - missing.length}/${words.length} words`].join(', ') };
}

const ffprobe = (await findBinary('ffprobe'))?.path;
const ffmpeg = (await findBinary('ffmpeg'))?.path;
const CODECS: Record<string, RegExp> = { mp3: /^mp3$/, ogg: /^(vorbis|opus)$/, flac: /^flac$/, wav: /^pcm_/, opus: /^opus$/, aac: /^aac$/, m4a: /^aac$/ };

interface Sound {
  codec: string;
  channels: number;
  rate: number;
  /** What the container says; an MP3's counts the encoder's padding, which players skip. */
  stated: number;
}

async function probe(path: string): Promise<Sound> {
  if (!ffprobe) throw new Error('no ffprobe (the npm package @ffprobe-installer/ffprobe, or PATH)');
  const { stdout } = await run(ffprobe, ['-v', 'error', '-select_streams', 'a:0', '-show_entries', 'format=duration:stream=codec_name,channels,sample_rate', '-of', 'json', path]);
  const probed = JSON.parse(stdout) as { format: { duration: string }; streams: { codec_name: string; channels: number; sample_rate: string }[] };
  const stream = probed.streams[0];
  return { codec: stream?.codec_name ?? '', channels: stream?.channels ?? 0, rate: Number(stream?.sample_rate ?? 0), stated: Number(probed.format.duration) };
}

/** How long a sound plays: its samples decoded, as a player hears them (16-bit, so 2 bytes each). */
async function playedSeconds(path: string, sound: Sound): Promise<number> {
  if (!ffmpeg) throw new Error('no ffmpeg (the npm package @ffmpeg-installer/ffmpeg, or PATH)');
  const { stdout } = await run(ffmpeg, ['-v', 'error', '-nostdin', '-i', path, '-map', 'a:0', '-f', 's16le', '-acodec', 'pcm_s16le', '-'], { encoding: 'buffer', maxBuffer: 512 * 1024 * 1024 });
  return stdout.length / (2 * sound.channels * sound.rate);
}

async function audioVerdict(source: string, target: string, output: string): Promise<Verdict> {
  const [before, after] = await Promise.all([probe(source), probe(output)]);
  const [heard, played] = await Promise.all([playedSeconds(source, before), playedSeconds(output, after)]);
  const problems: string[] = [];
  if (Math.abs(heard - played) > 0.1) problems.push(`plays ${played.toFixed(2)} s, the source ${heard.toFixed(2)} s`);
  if (!(CODECS[target] ?? /^$/).test(after.codec)) problems.push(`codec ${after.codec}`);
  if (before.channels !== after.channels) problems.push(`${after.channels} channels, the source ${before.channels}`);
  return { problems, seen: `${after.codec} ${after.rate} Hz, plays ${played.toFixed(2)} s (source ${heard.toFixed(2)} s; container says ${after.stated.toFixed(2)} s)` };
}

async function pictureVerdict(file: RealFile, source: string, target: string, output: string): Promise<Verdict> {
  const bytes = await bytesOf(source);
  const reference = file.family === 'xpm' ? () => readXpm(bytes.toString('latin1')) : () => sharp(bytes);
  const { width, height } = await reference().metadata();
  const seen = `source ${width}x${height}`;
  if (target === 'pdf') return { problems: await imagePdfProblems(reference, output), seen: `${seen}, its PDF page drawn again` };
  const result = await readFile(output);
  const made = target === 'bmp' ? () => readBmp(result) : () => sharp(result);
  const meta = await made().metadata();
  return { problems: await pictureProblems(reference, made, target), seen: `${seen}, result ${meta.width}x${meta.height}${meta.hasAlpha ? ' with alpha' : ''}` };
}

/** Whether checking this result reads a PDF's text (pdftotext): a document's PDF, or a PDF's text. */
export function readsPdfText(file: RealFile, target: string): boolean {
  if (file.family === 'image' || file.family === 'xpm' || file.family === 'audio') return false;
  return target === 'pdf' || (file.family === 'pdf' && !IMAGE_TARGETS.has(target));
}

/** Whether `output`, what the service made of `source` as `target`, is right. */
export async function verify(file: RealFile, source: string, target: string, output: string): Promise<Verdict> {
  switch (file.family) {
    case 'audio':
      return audioVerdict(source, target, output);
    case 'image':
    case 'xpm':
      return pictureVerdict(file, source, target, output);
    case 'data':
      return dataVerdict(source, target, output);
    default:
      return documentVerdict(file, source, target, output);
  }
}
