/**
 * Small fixtures for every source format the registry offers, made by the tests themselves
 * (sharp images, ffmpeg lavfi clips, pdf-lib documents, hand-written data and markup, pandoc-made
 * docx, odt and epub, LibreOffice-made office documents), and one decoder per engine that checks
 * an output by reading it back: sharp metadata for images (rendered PDF pages too), ffprobe for
 * audio and video, pdf-lib for PDF, the pages' text for PDF -> txt, a parser of the target format
 * for data, the marker text in a document's text (helpers/markup.ts, helpers/office.ts). Used by
 * engines/registry-pairs.test.ts and hostile/daemon.test.ts.
 */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { parse as parseCsv } from 'csv-parse/sync';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import sharp from 'sharp';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { findBinary } from '../../src/engines/media/binaries.ts';
import { findOffice } from '../../src/engines/office/find-office.ts';
import { OFFICE_MARKER, assertOfficeOutput, makeOfficeFixtures, zipMember } from './office.ts';
import { pdfPageTexts } from './pdf-text.ts';
import { fixtureXpm } from './xpm.ts';
import { htmlSiteZip } from './html.ts';
import { postscriptFixture } from './postscript.ts';
import { CHAIN_ENGINE } from '../../src/engines/chain.ts';
import { runProcess } from '../../src/engines/subprocess.ts';
import type { ConversionPair } from '../../src/engines/pairs.ts';
import { DOCUMENT_MARKER, assertMarkupOutput, makeMarkupFixture } from './markup.ts';

export const IMAGE_WIDTH = 96;
export const IMAGE_HEIGHT = 64;
export const ANIMATION_FRAMES = 3;
const MEDIA_WIDTH = 160;
const MEDIA_HEIGHT = 120;
const MEDIA_SECONDS = 2;
const PDF_PAGES = 2;
/** The PDF fixture's pages are US Letter: at the pdfpages engine's default 150 dpi, 1275 x 1650 pixels. */
const PDF_PAGE_PIXELS_AT_150_DPI = { width: 1275, height: 1650 };

/** What is known of a fixture, so that an output can be checked against it. */
export interface Fixture {
  path: string;
  width?: number;
  height?: number;
  /** Duration as ffprobe reads it (an AVI rounds up to whole frames). */
  seconds?: number;
  pages?: number;
  /** Frames of an animation (gif, webp); 1 or absent for a still image. */
  frames?: number;
}

// ------------------------------------------------------------------------- tools

export interface MediaTools {
  ffmpeg: string;
  ffprobe: string;
}

/** The binaries the media engine itself finds (FFMPEG_PATH, PATH, then the npm packages). */
export async function mediaTools(): Promise<MediaTools> {
  const ffmpeg = (await findBinary('ffmpeg'))?.path;
  const ffprobe = (await findBinary('ffprobe'))?.path;
  assert.ok(ffmpeg && ffprobe, 'ffmpeg and ffprobe must be found the way the media engine finds them');
  return { ffmpeg, ffprobe };
}

export async function ffmpegRun(tools: MediaTools, args: string[]): Promise<void> {
  const result = await runProcess(tools.ffmpeg, ['-hide_banner', '-v', 'error', '-nostdin', '-y', ...args]);
  assert.equal(result.code, 0, `ffmpeg ${args.join(' ')}: ${result.stderrTail}`);
}

export interface Probed {
  format: { duration?: string; format_name?: string };
  streams: { codec_type: string; codec_name: string; width?: number; height?: number }[];
}

export async function ffprobe(tools: MediaTools, file: string): Promise<Probed> {
  const lines: string[] = [];
  const result = await runProcess(tools.ffprobe, ['-v', 'error', '-show_format', '-show_streams', '-of', 'json', file], {
    onStdoutLine: (line) => lines.push(line),
  });
  assert.equal(result.code, 0, `ffprobe ${file}: ${result.stderrTail}`);
  return JSON.parse(lines.join('\n')) as Probed;
}

// ------------------------------------------------------------------------- images

function solid(width: number, height: number, red: number, alpha = 1) {
  return sharp({ create: { width, height, channels: 4, background: { r: red, g: 140, b: 60, alpha } } });
}

const SVG = `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="${IMAGE_WIDTH}" height="${IMAGE_HEIGHT}" viewBox="0 0 ${IMAGE_WIDTH} ${IMAGE_HEIGHT}">
  <rect width="100%" height="100%" fill="#2060a0"/><circle cx="48" cy="32" r="20" fill="#f0c020"/>
</svg>
`;

/** Encoded bytes of a still image source, as sharp (or, for SVG, a hand-written file) makes it. */
async function stillImage(source: string): Promise<Buffer> {
  const rgb = solid(IMAGE_WIDTH, IMAGE_HEIGHT, 200).removeAlpha();
  switch (source) {
    case 'jpg': return rgb.jpeg().toBuffer();
    case 'png': return solid(IMAGE_WIDTH, IMAGE_HEIGHT, 30, 0.5).png().toBuffer();
    case 'webp': return rgb.webp().toBuffer();
    case 'avif': return rgb.avif({ effort: 2 }).toBuffer();
    case 'gif': return rgb.gif().toBuffer();
    case 'tiff': return rgb.tiff().toBuffer();
    case 'svg': return Buffer.from(SVG);
    case 'svgz': return gzipSync(SVG);
    case 'xpm': return Buffer.from(fixtureXpm(IMAGE_WIDTH, IMAGE_HEIGHT));
    // The prebuilt libvips has no HEVC codec (`heifsave: Unsupported compression`): the HEIF
    // fixture is a HEIF container with AV1 coding, the only kind this sharp can read or write.
    case 'heif': return rgb.heif({ compression: 'av1', effort: 2 }).toBuffer();
    default: throw new Error(`no image fixture recipe for ${source}: add one`);
  }
}

/** An animation of three differently coloured frames, as gif or webp. */
export async function animatedImage(format: 'gif' | 'webp'): Promise<Buffer> {
  const frames = await Promise.all([10, 120, 240].slice(0, ANIMATION_FRAMES).map((red) => solid(IMAGE_WIDTH, IMAGE_HEIGHT, red).removeAlpha().png().toBuffer()));
  const joined = sharp(frames, { join: { animated: true } });
  return format === 'gif' ? joined.gif({ delay: 100 }).toBuffer() : joined.webp({ delay: 100 }).toBuffer();
}


// ------------------------------------------------------------------------- BMP, ICO, Netpbm

/** ffmpeg's arguments that write the PNG fixture as each still format the raster engine reads. */
export const RASTER_RECIPES: Record<string, string[]> = {
  bmp: ['-c:v', 'bmp', '-f', 'image2'],
  ico: ['-c:v', 'png', '-pix_fmt', 'rgba', '-f', 'ico'],
  ppm: ['-c:v', 'ppm', '-pix_fmt', 'rgb24', '-f', 'image2'],
  pgm: ['-c:v', 'pgm', '-pix_fmt', 'gray', '-f', 'image2'],
  pbm: ['-c:v', 'pbm', '-pix_fmt', 'monob', '-f', 'image2'],
};

/** What ffprobe calls the image inside each raster target (an icon holds a PNG). */
const RASTER_CODEC: Record<string, string> = { bmp: 'bmp', ico: 'png', ppm: 'ppm', pgm: 'pgm', pbm: 'pbm' };

async function rasterFixture(tools: MediaTools, source: string, path: string): Promise<Fixture> {
  const png = `${path}.png`;
  await writeFile(png, await stillImage('png'));
  await ffmpegRun(tools, ['-i', png, '-frames:v', '1', ...RASTER_RECIPES[source]!, '-update', '1', path]);
  return { path, width: IMAGE_WIDTH, height: IMAGE_HEIGHT, frames: 1 };
}

/** Decodes a still image of any target (sharp's formats by sharp, the raster ones by ffprobe). */
export async function assertAnyImage(tools: MediaTools, output: string, target: string, width: number, height: number): Promise<void> {
  const codec = RASTER_CODEC[target];
  if (!codec) return assertImage(output, target, width, height);
  const probed = await ffprobe(tools, output);
  const images = probed.streams.filter((stream) => stream.codec_type === 'video');
  assert.equal(images.length, 1, 'one image');
  assert.deepEqual([images[0]!.codec_name, images[0]!.width, images[0]!.height], [codec, width, height], `decodes as ${target}`);
}

// ------------------------------------------------------------------------- audio and video

const VIDEO = `testsrc2=size=${MEDIA_WIDTH}x${MEDIA_HEIGHT}:rate=10:duration=${MEDIA_SECONDS}`;
const AUDIO = `sine=frequency=440:sample_rate=44100:duration=${MEDIA_SECONDS}`;

/** Codecs a real file of each kind typically carries (ffmpeg output arguments per source format). */
export const MEDIA_RECIPES: Record<string, string[]> = {
  mp4: ['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-f', 'mp4'],
  webm: ['-c:v', 'libvpx-vp9', '-deadline', 'realtime', '-cpu-used', '8', '-c:a', 'libopus', '-ar', '48000', '-f', 'webm'],
  mov: ['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-c:a', 'pcm_s16le', '-f', 'mov'],
  mkv: ['-c:v', 'libvpx', '-deadline', 'realtime', '-cpu-used', '8', '-c:a', 'libvorbis', '-f', 'matroska'],
  avi: ['-c:v', 'mpeg4', '-c:a', 'libmp3lame', '-f', 'avi'],
  mp3: ['-vn', '-c:a', 'libmp3lame', '-f', 'mp3'],
  wav: ['-vn', '-c:a', 'pcm_s16le', '-f', 'wav'],
  ogg: ['-vn', '-c:a', 'libvorbis', '-f', 'ogg'],
  flac: ['-vn', '-c:a', 'flac', '-f', 'flac'],
  aac: ['-vn', '-c:a', 'aac', '-f', 'adts'],
  m4a: ['-vn', '-c:a', 'aac', '-f', 'ipod'],
  opus: ['-vn', '-c:a', 'libopus', '-ar', '48000', '-f', 'opus'],
  aiff: ['-vn', '-c:a', 'pcm_s16be', '-f', 'aiff'],
  au: ['-vn', '-c:a', 'pcm_s16be', '-f', 'au'],
  // MPEG-1 knows only the broadcast frame rates.
  mpg: ['-r', '25', '-c:v', 'mpeg1video', '-c:a', 'mp2', '-f', 'mpeg'],
  ts: ['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-f', 'mpegts'],
  '3gp': ['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-f', '3gp'],
  flv: ['-c:v', 'flv', '-c:a', 'libmp3lame', '-ar', '44100', '-f', 'flv'],
  wmv: ['-c:v', 'wmv2', '-c:a', 'wmav2', '-f', 'asf'],
  ogv: ['-c:v', 'libtheora', '-c:a', 'libvorbis', '-f', 'ogg'],
};

async function mediaFixture(tools: MediaTools, source: string, path: string): Promise<Fixture> {
  const recipe = MEDIA_RECIPES[source];
  assert.ok(recipe, `no media fixture recipe for ${source}: add one`);
  await ffmpegRun(tools, ['-f', 'lavfi', '-i', VIDEO, '-f', 'lavfi', '-i', AUDIO, '-ac', '2', '-shortest', ...recipe, path]);
  const seconds = Number((await ffprobe(tools, path)).format.duration);
  const video = !recipe.includes('-vn');
  return { path, seconds, ...(video ? { width: MEDIA_WIDTH, height: MEDIA_HEIGHT } : {}) };
}

// ------------------------------------------------------------------------- documents and data

/** Records with quotes, delimiters, a newline and non-Latin text in their values. */
export const ROWS = [
  { id: '1', name: 'Zoë, "the" café', city: 'Zürich' },
  { id: '2', name: 'line one\nline two', city: 'Москва' },
  { id: '3', name: 'semi;colon | pipe', city: '東京' },
];

/** RFC 4180 written by hand, so the fixture does not come from the library under test. */
function delimited(delimiter: string): string {
  const columns = Object.keys(ROWS[0]!);
  const quote = (value: string) => (/[",\n\t;|]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value);
  const lines = [columns, ...ROWS.map((row) => columns.map((c) => row[c as keyof typeof row]))];
  return lines.map((values) => values.map(quote).join(delimiter)).join('\r\n') + '\r\n';
}

/** TSV has no quoting: its fixture is written literally (quotes kept), so no value holds a line break. */
const TSV_ROWS = ROWS.map((row) => ({ ...row, name: row.name.replace(/\n/g, ' ') }));
function literalTsv(): string {
  const columns = Object.keys(ROWS[0]!);
  return [columns, ...TSV_ROWS.map((row) => columns.map((c) => row[c as keyof typeof row]))].map((values) => values.join('\t')).join('\n') + '\n';
}

const MARKDOWN = `# Quarterly *numbers*\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n<script>alert(1)</script>\n\nThe marker: ${DOCUMENT_MARKER}.\n`;
const TEXT = `Über Ωμέγα — Привет\nA second line of plain text.\n\nThe marker: ${DOCUMENT_MARKER}.\n`;

async function samplePdf(): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  doc.setTitle('Fixture');
  const font = await doc.embedFont(StandardFonts.Helvetica);
  for (let p = 0; p < PDF_PAGES; p++) doc.addPage([612, 792]).drawText(`Page ${p + 1}`, { x: 50, y: 700, size: 14, font });
  return doc.save({ useObjectStreams: false });
}

const DATA_TEXT: Record<string, () => string> = {
  csv: () => delimited(','),
  tsv: () => literalTsv(),
  json: () => JSON.stringify(ROWS, null, 2),
  ndjson: () => ROWS.map((row) => JSON.stringify(row)).join('\n') + '\n',
  yaml: () => stringifyYaml(ROWS),
  md: () => MARKDOWN,
  txt: () => TEXT,
};

// ------------------------------------------------------------------------- any source

const IMAGE_SOURCES = new Set(['jpg', 'png', 'webp', 'avif', 'gif', 'tiff', 'svg', 'svgz', 'xpm', 'heif']);
const OFFICE_SOURCES = new Set([
  'docx', 'doc', 'odt', 'rtf', 'xlsx', 'xls', 'ods', 'pptx', 'ppt', 'odp',
  'ott', 'dotx', 'dot', 'fodt', 'ots', 'xltx', 'xlt', 'fods', 'otp', 'potx', 'pot', 'fodp', 'odg', 'otg', 'fodg',
]);
/** LibreOffice makes every office fixture at once, the first time one is asked for (per dir). */
const officeFixtures = new Map<string, Promise<void>>();
/** Documents the markup engine reads (md and txt are the data fixtures above, which hold the marker too). */
const MARKUP_SOURCES = new Set(['html', 'docx', 'odt', 'epub', 'rst', 'org', 'latex']);

/**
 * Writes a fixture of `source` into `dir` as `fixture.<source>`. A source nobody wrote a recipe
 * for fails here, so a new source format cannot slip through untested.
 */
export async function makeFixture(dir: string, source: string, tools: MediaTools): Promise<Fixture> {
  const path = join(dir, `fixture.${source}`);
  if (IMAGE_SOURCES.has(source)) {
    await writeFile(path, await stillImage(source));
    return { path, width: IMAGE_WIDTH, height: IMAGE_HEIGHT, frames: 1 };
  }
  if (source in MEDIA_RECIPES) return mediaFixture(tools, source, path);
  if (source in RASTER_RECIPES) return rasterFixture(tools, source, path);
  if (source === 'zip') {
    await writeFile(path, htmlSiteZip());
    return { path };
  }
  if (source === 'eps' || source === 'ps' || source === 'ai') {
    await writeFile(path, postscriptFixture(source));
    return { path };
  }
  if (source === 'pdf') {
    await writeFile(path, await samplePdf());
    return { path, pages: PDF_PAGES };
  }
  if (OFFICE_SOURCES.has(source)) {
    const office = await findOffice(process.env);
    assert.ok(office.ready, `an office fixture needs LibreOffice: ${office.ready ? '' : office.problem}`);
    const made = officeFixtures.get(dir) ?? makeOfficeFixtures(office, dir);
    officeFixtures.set(dir, made);
    await made;
    return { path };
  }
  if (MARKUP_SOURCES.has(source)) return { path: await makeMarkupFixture(dir, source) };
  const text = DATA_TEXT[source];
  assert.ok(text, `no fixture recipe for source ${source}: add one`);
  await writeFile(path, text());
  return { path };
}

// ------------------------------------------------------------------------- checking outputs

/** What sharp's metadata calls each image target (AVIF is a HEIF container with AV1). */
const SHARP_FORMAT: Record<string, string> = { jpg: 'jpeg', png: 'png', webp: 'webp', avif: 'heif', gif: 'gif', tiff: 'tiff' };
/** Image targets that keep every page or frame of their input (the image engine's MULTI_PAGE_TARGETS). */
const ANIMATED = new Set(['gif', 'webp', 'tiff']);

/** Codec of the first video and audio stream ffprobe must find in each media target. */
const MEDIA_EXPECTED: Record<string, { video?: string; audio?: string }> = {
  mp3: { audio: 'mp3' }, wav: { audio: 'pcm_s16le' }, ogg: { audio: 'vorbis' }, flac: { audio: 'flac' },
  aac: { audio: 'aac' }, m4a: { audio: 'aac' }, opus: { audio: 'opus' },
  mp4: { video: 'h264', audio: 'aac' }, mov: { video: 'h264', audio: 'aac' }, mkv: { video: 'h264', audio: 'aac' },
  webm: { video: 'vp9', audio: 'opus' }, gif: { video: 'gif' },
};

export async function assertImage(output: string | Buffer, target: string, width: number, height: number, frames = 1): Promise<void> {
  const meta = await sharp(output, { animated: true }).metadata();
  assert.equal(meta.format, SHARP_FORMAT[target], `decodes as ${target}`);
  if (target === 'avif') assert.equal(meta.compression, 'av1');
  assert.equal(meta.width, width, 'width');
  assert.equal(meta.pageHeight ?? meta.height, height, 'height of a frame');
  assert.equal(meta.pages ?? 1, frames, 'frames');
}

function assertNear(actual: number, expected: number, what: string): void {
  assert.ok(Math.abs(actual - expected) <= expected * 0.05, `${what}: ${actual} s is not within 5 % of ${expected} s`);
}

/** Decodes a data output with a parser of its own format. */
export function decodeData(target: string, text: string): unknown {
  switch (target) {
    case 'csv': return parseCsv(text, { columns: true });
    // convd writes TSV literally (a quote is a quote), quoting only a value with a tab or line break.
    case 'tsv': return parseCsv(text, { columns: true, delimiter: '\t', relax_quotes: true });
    case 'json': return JSON.parse(text);
    case 'ndjson': return text.split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as unknown);
    case 'yaml': return parseYaml(text);
    default: throw new Error(`no parser for data target ${target}: add one`);
  }
}

/**
 * Decodes `outputPath` as the pair's target and checks it against the fixture it was made from.
 * An engine without a decoder here fails: a new engine's outputs must be checked, not trusted.
 */
export async function assertOutput(pair: Pick<ConversionPair, 'source' | 'target' | 'engine'>, outputPath: string, fixture: Fixture, tools: MediaTools): Promise<void> {
  const { target } = pair;
  switch (pair.engine) {
    case 'image': {
      const frames = ANIMATED.has(target) ? fixture.frames ?? 1 : 1;
      return assertImage(outputPath, target, fixture.width!, fixture.height!, frames);
    }
    case 'media': {
      if (target === 'jpg' || target === 'png') return assertImage(outputPath, target, fixture.width!, fixture.height!);
      const expected = MEDIA_EXPECTED[target];
      assert.ok(expected, `no expectation for media target ${target}: add one`);
      const probed = await ffprobe(tools, outputPath);
      const video = probed.streams.find((s) => s.codec_type === 'video');
      const audio = probed.streams.find((s) => s.codec_type === 'audio');
      if (expected.video) assert.deepEqual([video?.codec_name, video?.width, video?.height], [expected.video, fixture.width, fixture.height]);
      else assert.equal(video, undefined, 'an audio target carries no video');
      if (expected.audio) assert.equal(audio?.codec_name, expected.audio);
      assertNear(Number(probed.format.duration), fixture.seconds!, 'duration');
      return;
    }
    case 'pdf': {
      assert.equal(target, 'pdf');
      const doc = await PDFDocument.load(await readFile(outputPath), { updateMetadata: false });
      if (pair.source === 'txt') assert.ok(doc.getPageCount() >= 1);
      else assert.equal(doc.getPageCount(), fixture.pages ?? 1, 'page count');
      return;
    }
    case 'office': {
      const office = await findOffice(process.env);
      assert.ok(office.ready);
      return assertOfficeOutput(office, pair.source, target, outputPath);
    }
    case 'markup': {
      await assertMarkupOutput(target, outputPath);
      return;
    }
    case 'pdfpages': {
      if (target === 'txt') {
        const pages = (await readFile(outputPath, 'utf8')).split('\f');
        assert.deepEqual(pages.map((page) => page.trim()), Array.from({ length: fixture.pages ?? 1 }, (_, i) => `Page ${i + 1}`), 'one text per page, in order');
        return;
      }
      assert.ok(target in SHARP_FORMAT, `no expectation for pdfpages target ${target}: add one`);
      return assertImage(outputPath, target, PDF_PAGE_PIXELS_AT_150_DPI.width, PDF_PAGE_PIXELS_AT_150_DPI.height);
    }
    case 'data': {
      const text = await readFile(outputPath, 'utf8');
      if (target === 'html' && pair.source !== 'md') {
        // A table of the records (the page data prints from): every value in a cell of its own.
        const rows = pair.source === 'tsv' ? TSV_ROWS : ROWS;
        for (const value of rows.flatMap((row) => Object.values(row))) assert.ok(text.includes(`<td>${value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')}</td>`), `a cell holds ${value}`);
        return;
      }
      if (target === 'html') {
        assert.match(text, /<h1[^>]*>Quarterly <em>numbers<\/em><\/h1>/);
        assert.match(text, /<td>1<\/td>/);
        assert.doesNotMatch(text, /<script/i);
        return;
      }
      assert.deepEqual(decodeData(target, text), pair.source === 'tsv' ? TSV_ROWS : ROWS);
      return;
    }
    case 'raster':
      return assertAnyImage(tools, outputPath, target, fixture.width!, fixture.height!);
    case 'html':
      return assertHtmlOutput(target, outputPath);
    case 'postscript': {
      assert.equal(target, 'pdf');
      assert.ok((await PDFDocument.load(await readFile(outputPath))).getPageCount() >= 1);
      assert.ok((await pdfPageTexts(outputPath)).join('\n').includes(OFFICE_MARKER), `the PDF's text holds ${OFFICE_MARKER}`);
      return;
    }
    case CHAIN_ENGINE:
      return assertChainOutput(pair, outputPath, fixture, tools);
    case 'ocr':
      assert.equal(target, 'txt', `no expectation for ocr target ${target}: add one`);
      return assertOcrText(outputPath, fixture.pages ?? 1);
    default:
      assert.fail(`no decoder for outputs of engine ${pair.engine}: add one`);
  }
}

// ------------------------------------------------------------------------- chains

/** What the fixtures hold, by where they come from: the data rows, or the documents' marker. */
const DATA_CELL = ROWS[0]!.city;
const DOCUMENT_SOURCES = new Set([...OFFICE_SOURCES, 'md', 'html', 'epub', 'rst', 'org', 'latex', 'txt', 'eps', 'ps', 'ai']);

/**
 * Decodes a chain's output as its target and finds in it what its source fixture holds. A target
 * without a decoder here fails: add one.
 */
async function assertChainOutput(pair: Pick<ConversionPair, 'source' | 'target'>, output: string, fixture: Fixture, tools: MediaTools): Promise<void> {
  if (IMAGE_SOURCES.has(pair.source) || pair.source in RASTER_RECIPES) return assertImageChainOutput(pair, output, fixture, tools);
  const expected = DOCUMENT_SOURCES.has(pair.source) ? OFFICE_MARKER : DATA_CELL;
  const office = await findOffice(process.env);
  if (pair.target === 'pdf') {
    const pdf = await PDFDocument.load(await readFile(output));
    assert.ok(pdf.getPageCount() >= 1);
    assert.ok((await pdfPageTexts(output)).join('\n').includes(expected), `the PDF's text holds ${expected}`);
  } else if (['png', 'jpg', 'webp'].includes(pair.target)) {
    // Page 1 of the intermediate PDF, at the default 150 dpi: a page, not a thumbnail of nothing.
    const meta = await sharp(output).metadata();
    assert.equal(meta.format, pair.target === 'jpg' ? 'jpeg' : pair.target);
    assert.ok((meta.width ?? 0) > 300 && (meta.height ?? 0) > 300, `${meta.width}x${meta.height}`);
    const { channels } = await sharp(output).stats();
    assert.ok(channels.some((channel) => channel.min < 128), 'something is drawn on the page');
  } else if (pair.target === 'xlsx' || pair.target === 'ods') {
    assert.ok(office.ready);
    assert.match(await zipMember(office.python, output, pair.target === 'xlsx' ? 'xl/sharedStrings.xml' : 'content.xml'), new RegExp(expected));
  } else if (['json', 'ndjson', 'yaml', 'tsv'].includes(pair.target)) {
    const rows = decodeData(pair.target, await readFile(output, 'utf8')) as Record<string, unknown>[];
    assert.ok(rows.some((row) => Object.values(row).includes(expected)), `${expected} is in a record of ${JSON.stringify(rows)}`);
  } else if (['epub', 'html', 'md', 'rst'].includes(pair.target)) {
    await assertMarkupOutput(pair.target, output, expected);
  } else if (pair.target === 'txt') {
    assert.ok((await readFile(output, 'utf8')).includes(expected), `the text holds ${expected}`);
  } else if (pair.target === 'rtf') {
    const rtf = await readFile(output, 'latin1');
    assert.match(rtf, /^\{\\rtf1/);
    assert.ok(rtf.includes(expected), `the RTF holds ${expected}`);
  } else {
    assert.fail(`no decoder for chain target ${pair.target}: add one`);
  }
}

/**
 * A page Chromium drew: a PDF (A4 by default) whose text holds the marker, or an image of the
 * default window's width, at least its height (the whole page).
 */
export async function assertHtmlOutput(target: string, output: string): Promise<void> {
  if (target === 'pdf') {
    const pdf = await PDFDocument.load(await readFile(output));
    assert.ok(pdf.getPageCount() >= 1);
    // Chromium lays the page out in whole CSS pixels: A4 comes out within a point.
    const { width, height } = pdf.getPage(0).getSize();
    assert.ok(Math.abs(width - 595.3) <= 1.5 && Math.abs(height - 841.9) <= 1.5, `A4: ${width} x ${height}`);
    assert.ok((await pdfPageTexts(output)).join('\n').includes(OFFICE_MARKER), `the PDF's text holds ${OFFICE_MARKER}`);
    return;
  }
  assert.ok(['png', 'jpg', 'webp'].includes(target), `no expectation for html target ${target}: add one`);
  const meta = await sharp(output).metadata();
  assert.equal(meta.format, SHARP_FORMAT[target]);
  assert.equal(meta.width, 1280, 'the window\'s width');
  assert.ok((meta.height ?? 0) >= 800, `the whole page, at least the window's height: ${meta.height}`);
  const { channels } = await sharp(output).stats();
  assert.ok(channels.some((channel) => channel.min < 128), 'something is drawn');
}

/**
 * An image through PNG into another engine's format: the picture's size kept, or, into a PDF, one
 * page of the picture's size (at 72 dpi, a pixel a point).
 */
async function assertImageChainOutput(pair: Pick<ConversionPair, 'source' | 'target'>, output: string, fixture: Fixture, tools: MediaTools): Promise<void> {
  if (pair.target === 'txt') return assertOcrText(output, 1);
  if (pair.target !== 'pdf') return assertAnyImage(tools, output, pair.target, fixture.width!, fixture.height!);
  const pdf = await PDFDocument.load(await readFile(output));
  assert.equal(pdf.getPageCount(), 1);
  const { width, height } = pdf.getPage(0).getSize();
  assert.deepEqual([Math.round(width), Math.round(height)], [fixture.width, fixture.height], 'a page the size of the picture');
}

/**
 * What OCR makes of a fixture picture (shapes, no words; test/engines/ocr.test.ts measures
 * reading): text as the service writes it, UTF-8 with a page for each of the picture's, no
 * control characters but the pages' form feeds, one newline at the end.
 */
async function assertOcrText(output: string, pages: number): Promise<void> {
  const bytes = await readFile(output);
  const text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  assert.ok(text.endsWith('\n'), 'one newline at the end');
  assert.doesNotMatch(text, /[\u0000-\u0008\u000B\u000D-\u001F\u007F]/, 'no control characters');
  assert.equal(text.split('\f').length, pages, 'a page of text for each page');
}

// ------------------------------------------------------------------------- hostile inputs

