/**
 * "Words of the source found in the result": a source's text read by a path of its own (the
 * markup stripped by hand, an OpenDocument's XML without its tags, a PDF through Poppler's
 * pdftotext, which no engine uses), a sample of its words that says whether a result kept the
 * whole of it, and that sample looked up in a result's text.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { openZip } from './markup.ts';
import type { Family } from './real-files.ts';

const run = promisify(execFile);

/** Poppler's pdftotext on PATH (Debian's poppler-utils), or undefined. */
export const PDFTOTEXT = (process.env.PATH ?? '').split(delimiter).map((dir) => join(dir, 'pdftotext')).find((path) => existsSync(path));

/** A PDF's text in reading order, every page, as pdftotext reads it. */
export async function pdfText(path: string): Promise<string> {
  if (!PDFTOTEXT) throw new Error('reading a PDF needs pdftotext (apt-get install poppler-utils)');
  return (await run(PDFTOTEXT, ['-q', '-enc', 'UTF-8', path, '-'], { maxBuffer: 256 * 1024 * 1024 })).stdout;
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ', mdash: '—', ndash: '–', hellip: '…' };

function decodeEntities(text: string): string {
  return text
    .replace(/&#x([0-9a-f]+);/gi, (_, hex: string) => String.fromCodePoint(Number.parseInt(hex, 16)))
    .replace(/&#(\d+);/g, (_, code: string) => String.fromCodePoint(Number(code)))
    .replace(/&([a-z]+);/gi, (whole, name: string) => ENTITIES[name.toLowerCase()] ?? whole);
}

/**
 * Elements inside a line of text (HTML's, and the runs of OOXML and ODF: `w:r`, `w:t`, `a:t`,
 * `text:span`, `text:a`), which join the letters on either side: `\<span>n</span>gamma` is one
 * word as a reader sees it.
 */
const INLINE = new Set(['span', 'a', 'em', 'strong', 'b', 'i', 'u', 'code', 'tt', 'kbd', 'var', 'samp', 'sup', 'sub', 'small', 'big', 'abbr', 'cite', 'q', 'mark', 'del', 'ins', 'font', 'r', 't', 'rpr']);

/** Markup as text: an inline element's tags vanish, every other tag (a paragraph, a cell, a break) is a space. */
export function withoutTags(markup: string): string {
  const text = markup
    .replace(/<!--[\s\S]*?-->/g, ' ')
    .replace(/<\/?([\w:.-]+)[^>]*>/g, (_, name: string) => (INLINE.has(name.toLowerCase().replace(/^[\w.-]+:/, '')) ? '' : ' '))
    .replace(/<[^>]*>/g, ' ');
  return decodeEntities(text);
}

const URLS = /\b[a-z][a-z0-9+.-]*:\/\/[^\s)>\]"']*|\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+/gi;

/**
 * What an OpenDocument shows of its body: not its styles, its pictures' bytes (a flat file holds
 * them as Base64), nor what is never printed: speaker notes, hidden sections, shapes' titles and
 * descriptions, forms, and a template's placeholders (`<Sender's name>`: prompts to click and
 * type over, which LibreOffice shows on screen only).
 */
function officeBody(xml: string): string {
  const body = /<office:body>([\s\S]*)<\/office:body>/.exec(xml)?.[1] ?? '';
  return withoutTags(
    body
      .replace(/<office:binary-data>[\s\S]*?<\/office:binary-data>/g, ' ')
      .replace(/<text:placeholder[\s\S]*?<\/text:placeholder>/g, ' ')
      .replace(/<presentation:notes[\s\S]*?<\/presentation:notes>/g, ' ')
      .replace(/<text:section [^>]*text:display="none"[^>]*>[\s\S]*?<\/text:section>/g, ' ')
      .replace(/<svg:(title|desc)>[\s\S]*?<\/svg:\1>/g, ' ')
      .replace(/<office:forms[\s\S]*?<\/office:forms>/g, ' '),
  );
}

/** Markdown without link targets, reference definitions and images' descriptions (a badge's "CI tests" is a picture). */
function markdownText(markdown: string): string {
  return withoutTags(
    markdown
      .replace(/!\[[^\]]*\]/g, ' ')
      .replace(/^\s*\[[^\]]+\]:\s*\S+.*$/gm, ' ')
      .replace(/\]\([^)]*\)/g, '] ')
      .replace(URLS, ' '),
  );
}

function htmlText(html: string): string {
  return withoutTags(html.replace(/<head[\s>][\s\S]*?<\/head>/i, ' ').replace(/<(script|style|template)[\s>][\s\S]*?<\/\1>/gi, ' ').replace(URLS, ' '));
}

/** reStructuredText without directive and option names, roles, link targets and comments. */
function rstText(rst: string): string {
  return rst
    .replace(/^\s*\.\.\s+[\w:-]+::.*$/gm, ' ')
    .replace(/^\s*\.\.\s+(?!\S+::).*$/gm, ' ')
    .replace(/^\s+:[\w-]+:.*$/gm, ' ')
    .replace(/:[\w:-]+:`/g, '`')
    .replace(/<[^<>`\s]+>`/g, '`')
    .replace(URLS, ' ');
}

/** The text of a source file, read without the engines that convert it. */
export async function sourceText(family: Family, path: string): Promise<string> {
  const raw = await readFile(path);
  const bytes = path.endsWith('.gz') ? gunzipSync(raw) : raw;
  switch (family) {
    case 'office':
      return officeBody(await (await openZip(path)).text('content.xml'));
    case 'flat-office':
      return officeBody(bytes.toString('utf8'));
    case 'markdown':
      return markdownText(bytes.toString('utf8'));
    case 'html':
      return htmlText(bytes.toString('utf8'));
    case 'rst':
      return rstText(bytes.toString('utf8'));
    case 'pdf':
      return pdfText(path);
    default:
      return bytes.toString('utf8');
  }
}

/** Lower-case words of five letters or more, in the order they come. */
function wordsOf(text: string): string[] {
  return (text.normalize('NFC').toLowerCase().match(/\p{L}{5,}/gu) ?? []);
}

/**
 * Up to `count` distinct words spread evenly over the text, from its first to its last: words
 * that occur once where there are enough of them, so that a result cut short, or missing a part,
 * misses some of the sample (a word used all over the text would be found anyway).
 */
export function sampleWords(text: string, count = 40): string[] {
  const words = wordsOf(text);
  const seen = new Map<string, number>();
  for (const word of words) seen.set(word, (seen.get(word) ?? 0) + 1);
  const distinct = [...new Set(words)];
  const once = distinct.filter((word) => seen.get(word) === 1);
  const pool = once.length >= count ? once : distinct;
  if (pool.length <= count) return pool;
  return Array.from({ length: count }, (_, index) => pool[Math.round((index * (pool.length - 1)) / (count - 1))]!);
}

/**
 * The words of `sample` a result's text lacks. A word a PDF hyphenated at a line's end
 * ("conver-\nsion") is found joined, and its halves as they are (a compound such as "well-known").
 */
export function missingWords(sample: string[], resultText: string): string[] {
  const text = resultText.normalize('NFC').replace(/\u00ad/g, '');
  const joined = text.replace(/(\p{L})-\r?\n\s*(\p{L})/gu, '$1$2');
  const found = new Set([...wordsOf(text), ...wordsOf(joined)]);
  return sample.filter((word) => !found.has(word));
}
