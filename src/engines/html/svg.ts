import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import type { Page } from 'playwright-core';
import { ConversionFailure } from '../../errors/api-error.ts';
import type { ConversionPair, FormatInfo } from '../pairs.ts';
import { IMAGE_OPTIONS, IMAGE_VARIANTS, PAGE_SIZES, type PageSize } from '../pdf/formats.ts';
import type { EngineJob } from '../types.ts';
import type { DrawPlan } from './render.ts';
import { ZIP_LIMITS, type Site } from './site.ts';

/**
 * SVG -> PDF as vectors: the drawing opened as a document of its own (its scripts run, bounded
 * like a page's; it loads nothing but itself, render.ts), sized to its own size and printed on a
 * paper of that size. Where Chromium is missing the pdf engine draws it as pixels instead
 * (catalog.ts lists this engine first, so it wins the pair where it runs).
 */

export const SVG_SOURCES = ['svg', 'svgz'] as const;

export const SVG_FORMATS: FormatInfo[] = [
  { key: 'svg', extensions: ['svg'], mime: 'image/svg+xml' },
  { key: 'svgz', extensions: ['svgz'], mime: 'image/svg+xml' },
];

/** The options and variants of the pdf engine's svg -> pdf, kept so that clients see the same pair. */
export function svgPairs(): ConversionPair[] {
  return SVG_SOURCES.map((source): ConversionPair => ({
    source, target: 'pdf', engine: 'html', kind: 'pdf', options: IMAGE_OPTIONS, variants: IMAGE_VARIANTS,
  }));
}

export function isSvgSource(source: string): boolean {
  return (SVG_SOURCES as readonly string[]).includes(source);
}

interface Size {
  width: number;
  height: number;
}

const ENTRY = '/drawing.svg';
/** A CSS pixel is 3/4 of a point (96 px and 72 pt to the inch). */
const PT_PER_PX = 0.75;
/** Where an SVG gives no size, no viewBox and draws nothing: the size CSS gives such an object. */
const DEFAULT_SIZE = { width: 300, height: 150 } as const;
/** 200 inches, the largest page Acrobat opens: a larger drawing is scaled down to it (vectors lose nothing). */
const MAX_PAGE_PT = 14_400;
/** An empty SVG: what an image the drawing may not load gets, so that nothing is drawn there. */
const NOTHING = '<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>';
const gunzipAsync = promisify(gunzip);

/** The drawing as the page's only file; an svgz unpacked first, up to what a zipped page may unpack to. */
export async function loadSvgSite(source: string, inputPath: string): Promise<Site> {
  const bytes = await readFile(inputPath);
  if (source !== 'svgz') return new Map([[ENTRY, bytes]]);
  try {
    return new Map([[ENTRY, await gunzipAsync(bytes, { maxOutputLength: ZIP_LIMITS.totalBytes })]]);
  } catch (error) {
    const tooLarge = error instanceof RangeError || (error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE';
    throw new ConversionFailure('input_invalid', tooLarge
      ? `The svgz unpacks to more than ${ZIP_LIMITS.totalBytes / 1024 / 1024} MiB; that is the most a drawing may hold.`
      : `The input cannot be read as svgz (gzip-compressed SVG): ${error instanceof Error ? error.message : String(error)}`);
  }
}

export function svgPlan(job: EngineJob): DrawPlan {
  return { entryPath: ENTRY, refusedImage: { body: NOTHING, contentType: 'image/svg+xml' }, draw: (page) => printSvg(page, job) };
}

/** What the page finds of its root element: not an SVG (an XML error, another document), or its size attributes. */
type Measured =
  | { svg: false; error: boolean }
  | { svg: true; width: number | null; height: number | null; viewBox: Size | null; extent: Size };

/**
 * Absolute width and height (any unit, in CSS px; a percentage or none gives null), the viewBox,
 * and how far the drawing reaches right and down (for an SVG that states neither size nor viewBox).
 * A string, not a function: what tsx compiles a function into is not always valid in the page.
 */
const MEASURE = `(() => {
  const root = document.documentElement;
  if (!(root instanceof SVGSVGElement)) return { svg: false, error: document.getElementsByTagNameNS('*', 'parsererror').length > 0 };
  const length = (name) => {
    const value = root[name].baseVal;
    return root.hasAttribute(name) && value.unitType !== SVGLength.SVG_LENGTHTYPE_PERCENTAGE && value.value > 0 ? value.value : null;
  };
  const box = root.hasAttribute('viewBox') ? root.viewBox.baseVal : null;
  let extent = { width: 0, height: 0 };
  try {
    const bbox = root.getBBox();
    extent = { width: Math.max(0, bbox.x + bbox.width), height: Math.max(0, bbox.y + bbox.height) };
  } catch {}
  return {
    svg: true, width: length('width'), height: length('height'),
    viewBox: box && box.width > 0 && box.height > 0 ? { width: box.width, height: box.height } : null, extent,
  };
})()`;

/** The drawing's own size in CSS px: its width and height, else its viewBox's proportions, else what it draws. */
export function svgSize(measured: Extract<Measured, { svg: true }>): Size {
  const { width, height, viewBox, extent } = measured;
  if (width && height) return { width, height };
  if (viewBox) {
    const ratio = viewBox.width / viewBox.height;
    if (width) return { width, height: width / ratio };
    if (height) return { width: height * ratio, height };
    return { ...viewBox };
  }
  return {
    width: width ?? (extent.width > 0 ? extent.width : DEFAULT_SIZE.width),
    height: height ?? (extent.height > 0 ? extent.height : DEFAULT_SIZE.height),
  };
}

/** The page, and the drawing on it, in points: as the pdf engine lays out an image (image-to-pdf.ts). */
export function svgLayout(size: Size, variant: string | null, margin: number): { page: Size; drawing: Size } {
  const cap = Math.min(1, MAX_PAGE_PT / Math.max(size.width * PT_PER_PX + 2 * margin, size.height * PT_PER_PX + 2 * margin));
  const natural = { width: size.width * PT_PER_PX * cap, height: size.height * PT_PER_PX * cap };
  const paper = variant === 'a4' || variant === 'letter' ? PAGE_SIZES[variant as PageSize] : null;
  if (!paper) return { page: { width: natural.width + 2 * margin, height: natural.height + 2 * margin }, drawing: natural };
  // Landscape pages for landscape drawings; scaled down to fit, never up.
  const [pageWidth, pageHeight] = natural.width > natural.height ? [paper[1], paper[0]] : [paper[0], paper[1]];
  const scale = Math.min(1, Math.max(1, pageWidth - 2 * margin) / natural.width, Math.max(1, pageHeight - 2 * margin) / natural.height);
  return { page: { width: pageWidth, height: pageHeight }, drawing: { width: natural.width * scale, height: natural.height * scale } };
}

async function printSvg(page: Page, job: EngineJob): Promise<Buffer> {
  const measured = await page.evaluate(MEASURE) as Measured;
  if (!measured.svg) {
    throw new ConversionFailure('input_invalid', measured.error
      ? `The input cannot be read as ${job.source}: it is not well-formed XML.`
      : `The input cannot be read as ${job.source}: its root element is not an SVG <svg>.`);
  }
  const size = svgSize(measured);
  const margin = typeof job.options.margin === 'number' ? job.options.margin : 0;
  const { page: paper, drawing } = svgLayout(size, job.variant, margin);
  // The drawing fills the printable area, which has its proportions: a paper rounded by
  // Chromium to its own units then never pushes a sliver onto a second page. Without a viewBox
  // the drawing would not scale with its box: it gets the one of its own size.
  await page.evaluate(`(() => {
    const root = document.documentElement;
    if (!root.hasAttribute('viewBox')) root.setAttribute('viewBox', '0 0 ${size.width} ${size.height}');
    root.style.setProperty('width', '100%', 'important');
    root.style.setProperty('height', '100%', 'important');
  })()`);
  const inches = (points: number) => `${points / 72}in`;
  const side = { x: (paper.width - drawing.width) / 2, y: (paper.height - drawing.height) / 2 };
  return page.pdf({
    width: inches(paper.width),
    height: inches(paper.height),
    margin: { top: inches(side.y), bottom: inches(side.y), left: inches(side.x), right: inches(side.x) },
    printBackground: true,
    pageRanges: '1',
  });
}
