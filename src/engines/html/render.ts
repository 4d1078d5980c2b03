import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Page, Route } from 'playwright-core';
import type { WarmPage } from './browser.ts';
import sharp from '../image/sharp-module.ts';
import { ConversionFailure } from '../../errors/api-error.ts';
import { checkOutputSize } from '../output-cap.ts';
import type { EngineJob, EngineOutput } from '../types.ts';
import { maxShotSide, PAPERS, WINDOW, type HtmlTarget } from './formats.ts';
import { LeftOutRequests, type LeftOutRemedies } from './left-out.ts';
import { contentTypeOf, ENTRY_PATH, type Site } from './site.ts';

/** Limits of one render that are the service's, not the job's options. */
export interface RenderLimits {
  maxInputPixels: number;
  /** Public http(s) resources may be loaded (through the URL inputs' fetcher); null: none. */
  remote: { allowPrivate: boolean; allowedNetworks: readonly string[] } | null;
  /** What the conversion could have done to have what its page misses (left-out.ts): ask for remote resources, send a zip. */
  remedies: LeftOutRemedies;
  /** The renderer memory limit, MiB, named when a page is killed past it. */
  rendererMemoryMb: number;
}

/** The page a conversion renders in, and what it reports back about it. */
export interface RenderPage {
  warm: WarmPage;
  /** The origin the conversion's own files are served at (a site no other conversion has, where pages are reused). */
  origin: string;
  /** Filled with the origin of every response the page was given: the storage it may have written. */
  touched: Set<string>;
  /** True when the renderer watch killed one of the browser's renderers since `since` (performance.now()). */
  killedForMemory(since: number): boolean;
}

/**
 * A page other than the site's HTML entry (an SVG drawing, svg.ts): the file the page opens, what
 * an image it may not load gets instead (so that nothing, not a broken-image icon, is drawn), and
 * how the loaded page becomes the output.
 */
export interface DrawPlan {
  entryPath: string;
  refusedImage?: { body: string; contentType: string };
  draw(page: Page): Promise<Buffer>;
}

/** What one remote resource, and all of a page's, may weigh; how long one may take. */
const REMOTE_LIMITS = { eachBytes: 20 * 1024 * 1024, totalBytes: 100 * 1024 * 1024, timeoutMs: 15_000, count: 200 } as const;

/**
 * Renders the conversion's site in its page, whose context no other account's conversion ever
 * had (browser.ts); requests for anything but the site's own files are aborted (and whatever
 * escapes interception meets the browser's black-hole proxy). The caller releases the page.
 */
export async function render(target: RenderPage, site: Site, job: EngineJob, limits: RenderLimits, plan?: DrawPlan): Promise<EngineOutput & { size: number }> {
  const format = job.target as HtmlTarget;
  const options = job.options;
  const width = format === 'pdf' ? WINDOW.width : numberOption(options.width, WINDOW.width);
  const height = format === 'pdf' ? WINDOW.height : numberOption(options.height, WINDOW.height);
  const { context, page } = target.warm;
  const entryPath = plan?.entryPath ?? ENTRY_PATH;
  const started = performance.now();
  // Remote resources are fetched to files here on their way to the page (render's own directory).
  const fetched = { bytes: 0, count: 0, dir: `${job.outputPath}.resources` };
  const leftOut = new LeftOutRequests(target.origin, limits.remedies);
  // The job's abort (time limit, cancel, shutdown) closes the context: that ends its renderer
  // whatever its script is doing, and every call below rejects.
  const onAbort = () => void context.close().catch(() => undefined);
  job.signal.addEventListener('abort', onAbort, { once: true });
  let crashed = false;
  const onCrash = () => {
    crashed = true;
  };
  page.on('crash', onCrash);
  try {
    try {
      // A web page fetched from a URL is served at that URL (its relative links resolve there, and
      // are loaded only as remote resources); an upload at the origin that cannot exist.
      const entryUrl = pageUrl(job.sourceUrl);
      let entryServed = false;
      await context.route('**/*', (route) => {
        if (entryUrl && !entryServed && route.request().isNavigationRequest() && sameDocument(route.request().url(), entryUrl)) {
          entryServed = true;
          target.touched.add(new URL(entryUrl).origin);
          return route.fulfill({ status: 200, body: site.get(entryPath)!, headers: { 'content-type': contentTypeOf(entryPath) } }).catch(() => undefined);
        }
        return serve(route, site, target, limits.remote && { ...limits.remote, fetched, signal: job.signal }, leftOut, plan?.refusedImage);
      });
      if (width !== WINDOW.width || height !== WINDOW.height) await page.setViewportSize({ width, height });
      job.signal.throwIfAborted();
      await page.emulateMedia({ media: mediaOf(options.media, format) });
      await page.goto(entryUrl ?? `${target.origin}${entryPath}`, { waitUntil: 'load', timeout: 0 });
      job.onProgress(40);
      if (typeof options.wait_for_selector === 'string') {
        await page.waitForSelector(options.wait_for_selector, { state: 'attached', timeout: 0 }).catch((error: unknown) => {
          throw /selector|parse|valid/i.test(describe(error)) && !job.signal.aborted
            ? new ConversionFailure('input_invalid', `wait_for_selector is not a CSS selector Chromium accepts: ${describe(error)}`)
            : error;
        });
      }
      const delay = numberOption(options.wait_delay, 0);
      if (delay > 0) await page.waitForTimeout(delay * 1000);
      job.onProgress(60);
      const bytes = plan ? await plan.draw(page) : format === 'pdf' ? await printPdf(page, options) : await screenshot(page, format, options, limits, width);
      checkOutputSize(bytes.length, job.maxOutputBytes);
      job.signal.throwIfAborted();
      await writeFile(job.outputPath, bytes);
      job.onProgress(100);
      const warnings = leftOut.warnings();
      return warnings.length > 0 ? { size: bytes.length, warnings } : { size: bytes.length };
    } catch (error) {
      if (job.signal.aborted) throw job.signal.reason;
      if (error instanceof ConversionFailure) throw error;
      if (crashed && target.killedForMemory(started)) {
        throw new ConversionFailure('memory_limit', `The page needed more memory than its limit of ${limits.rendererMemoryMb} MB (html_memory_mb).`);
      }
      if (crashed) throw new ConversionFailure('conversion_failed', 'The page crashed while it was drawn (a script that takes more memory than a page has is the usual cause).');
      throw new ConversionFailure('conversion_failed', `Chromium could not render the page: ${describe(error)}`);
    }
  } finally {
    job.signal.removeEventListener('abort', onAbort);
    page.off('crash', onCrash);
    await rm(fetched.dir, { recursive: true, force: true });
  }
}

/** An http(s) URL without its fragment, or undefined. */
function pageUrl(source: string | undefined): string | undefined {
  if (!source) return undefined;
  try {
    const url = new URL(source);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
    url.hash = '';
    return url.href;
  } catch {
    return undefined;
  }
}

function sameDocument(requested: string, entry: string): boolean {
  return pageUrl(requested) === entry;
}

interface RemoteAccess {
  allowPrivate: boolean;
  allowedNetworks: readonly string[];
  fetched: { bytes: number; count: number; dir: string };
  signal: AbortSignal;
}

/**
 * The site's own files; with remote access, public http(s) resources fetched by the URL inputs'
 * fetcher (the address policy on every hop, redirects included; a size cap and a time limit);
 * anything else is refused.
 */
async function serve(route: Route, site: Site, target: RenderPage, remote: RemoteAccess | null, leftOut: LeftOutRequests, refusedImage?: DrawPlan['refusedImage']): Promise<void> {
  const url = route.request().url();
  const type = route.request().resourceType();
  const standIn = refusedImage && type === 'image'
    ? () => route.fulfill({ status: 200, body: refusedImage.body, headers: { 'content-type': refusedImage.contentType } })
    : undefined;
  if (url.startsWith(`${target.origin}/`)) {
    target.touched.add(target.origin);
    let path: string;
    try {
      path = decodeURIComponent(new URL(url).pathname);
    } catch {
      path = '';
    }
    const body = site.get(path);
    if (!body) leftOut.note(url, type, 'not-sent');
    await (body
      ? route.fulfill({ status: 200, body, headers: { 'content-type': contentTypeOf(path), 'cache-control': 'no-store' } })
      : standIn?.() ?? route.fulfill({ status: 404, body: 'not found', headers: { 'content-type': 'text/plain' } })).catch(() => undefined);
    return;
  }
  if (remote && /^https?:\/\//i.test(url) && remote.fetched.count < REMOTE_LIMITS.count && remote.fetched.bytes < REMOTE_LIMITS.totalBytes) {
    const body = await fetchRemote(url, remote).catch(() => null);
    if (body) {
      target.touched.add(new URL(url).origin);
      await route.fulfill({ status: 200, body: body.bytes, headers: { 'content-type': body.contentType ?? contentTypeOf(new URL(url).pathname) } }).catch(() => undefined);
      return;
    }
    leftOut.note(url, type, 'fetch-failed');
  } else {
    leftOut.note(url, type, remote ? 'fetch-failed' : 'not-fetched');
  }
  await (standIn?.() ?? route.abort('blockedbyclient')).catch(() => undefined);
}

async function fetchRemote(url: string, remote: RemoteAccess): Promise<{ bytes: Buffer; contentType: string | null }> {
  const { fetchUrlToFile } = await import('../../inputs/fetch-url.ts');
  await mkdir(remote.fetched.dir, { recursive: true, mode: 0o700 });
  const file = join(remote.fetched.dir, String(++remote.fetched.count));
  try {
    const fetched = await fetchUrlToFile(url, file, {
      maxBytes: Math.min(REMOTE_LIMITS.eachBytes, REMOTE_LIMITS.totalBytes - remote.fetched.bytes),
      timeoutMs: REMOTE_LIMITS.timeoutMs,
      allowPrivate: remote.allowPrivate,
      allowedNetworks: remote.allowedNetworks,
      signal: remote.signal,
    });
    remote.fetched.bytes += fetched.bytes;
    return { bytes: await readFile(file), contentType: fetched.contentType };
  } finally {
    await rm(file, { force: true });
  }
}

async function printPdf(page: Page, options: EngineJob['options']): Promise<Buffer> {
  if (options.omit_background === true) await page.addStyleTag({ content: 'html, body { background: transparent !important; }' });
  return page.pdf(pdfPrintOptions(options));
}

type PdfPrint = NonNullable<Parameters<Page['pdf']>[0]>;

/** What Chromium is asked to print a conversion's PDF with (a tagged PDF, its own header and footer off). */
export function pdfPrintOptions(options: EngineJob['options']): PdfPrint {
  const header = typeof options.header_html === 'string' ? options.header_html : undefined;
  const footer = typeof options.footer_html === 'string' ? options.footer_html : undefined;
  const [portraitWidth, portraitHeight] = typeof options.paper_width === 'number' && typeof options.paper_height === 'number'
    ? [options.paper_width, options.paper_height]
    : PAPERS[String(options.paper ?? 'a4')] ?? PAPERS.a4!;
  // Chromium leaves a paper of explicit width and height as it is, landscape or not: turned here.
  const [width, height] = options.landscape === true ? [portraitHeight, portraitWidth] : [portraitWidth, portraitHeight];
  const margin = (name: string) => `${numberOption(options[name], 10)}mm`;
  return {
    width: `${width}mm`,
    height: `${height}mm`,
    scale: numberOption(options.scale, 1),
    printBackground: options.print_background !== false,
    preferCSSPageSize: options.prefer_css_page_size === true,
    ...(typeof options.page_ranges === 'string' ? { pageRanges: options.page_ranges } : {}),
    margin: { top: margin('margin_top'), right: margin('margin_right'), bottom: margin('margin_bottom'), left: margin('margin_left') },
    // Chromium's own header and footer (date, title, URL, page) would show convd.invalid: an empty one instead.
    displayHeaderFooter: header !== undefined || footer !== undefined,
    headerTemplate: header ?? '<span></span>',
    footerTemplate: footer ?? '<span></span>',
    outline: options.export_bookmarks === true,
    tagged: true,
  };
}

async function screenshot(page: Page, target: HtmlTarget, options: EngineJob['options'], limits: RenderLimits, width: number): Promise<Buffer> {
  const fullPage = options.full_page !== false;
  // A long page is cut where Chromium, the target format or the pixel limit would stop: at most
  // 16,384 pixels (16,383 for WebP), and no more than the pixel limit allows at this width.
  const maxHeight = Math.max(1, Math.min(maxShotSide(target), Math.floor(limits.maxInputPixels / width)));
  const pageHeight = fullPage ? Number(await page.evaluate('Math.max(document.documentElement.scrollHeight, document.body ? document.body.scrollHeight : 0)')) : 0;
  const clip = fullPage && pageHeight > maxHeight ? { x: 0, y: 0, width, height: maxHeight } : undefined;
  const omitBackground = options.omit_background === true && target !== 'jpg';
  const quality = numberOption(options.quality, 80);
  const shoot = (window: boolean) => page.screenshot({
    type: target === 'jpg' ? 'jpeg' : 'png',
    ...(target === 'jpg' ? { quality } : {}),
    fullPage: fullPage && !window,
    ...(clip && !window ? { clip } : {}),
    omitBackground,
    animations: 'disabled',
    caret: 'hide',
    timeout: 0,
  });
  let shot: Buffer;
  if (clip) {
    // A full-page shot makes Chromium lay out and
    // paint the whole document at its full height (captureBeyondViewport), even where only the
    // top `maxHeight` pixels are kept: 30 s for a page of 150,000 px (340 KB of Markdown), against
    // 1.2 s for the same picture taken as a window of the kept height. So a page taller than the
    // limit is shot as a window that tall, and the window is put back for whatever runs next. As
    // in Chromium's own full-page shots, `vh` units follow the taller window.
    const viewport = page.viewportSize();
    await page.setViewportSize({ width, height: maxHeight });
    try {
      shot = await shoot(true);
    } finally {
      if (viewport) await page.setViewportSize(viewport);
    }
  } else {
    shot = await shoot(false);
  }
  if (target !== 'webp') return shot;
  try {
    return await sharp(shot).webp({ quality }).toBuffer();
  } catch (error) {
    const { width: shotWidth, height: shotHeight } = await sharp(shot).metadata().catch(() => ({ width: 0, height: 0 }));
    throw new ConversionFailure('conversion_failed', `The page's picture (${shotWidth} x ${shotHeight} pixels) cannot be made a WebP: ${describe(error)}. A smaller height, or full_page=false, makes one.`);
  }
}

function mediaOf(value: unknown, target: HtmlTarget): 'print' | 'screen' {
  if (value === 'print' || value === 'screen') return value;
  return target === 'pdf' ? 'print' : 'screen';
}

function numberOption(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : fallback;
}

/** An error's first line, short enough for a conversion's message. */
export function describe(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0]?.slice(0, 300) ?? 'unknown error';
}

