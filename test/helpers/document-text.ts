/**
 * The words of a document result, read back independently of the engine that wrote it: text
 * targets as they are, HTML and a package's XML (docx, odt, epub) without their tags (a line for
 * each paragraph and line break), RTF through pandoc's RTF reader, PDF through PDFium.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { openZip, pandocPath } from './markup.ts';
import { pdfPageTexts } from './pdf-text.ts';

const run = promisify(execFile);

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };

function decode(text: string): string {
  return text
    .replace(/&#x([0-9a-f]+);/gi, (_, hex: string) => String.fromCodePoint(Number.parseInt(hex, 16)))
    .replace(/&#(\d+);/g, (_, code: string) => String.fromCodePoint(Number(code)))
    .replace(/&([a-z]+);/gi, (whole, name: string) => ENTITIES[name.toLowerCase()] ?? whole);
}

/** Markup without its tags: the breaks given become new lines, every other tag nothing. */
function untagged(xml: string, breaks: RegExp): string {
  return decode(xml.replace(breaks, '\n').replace(/<[^>]*>/g, ''));
}

const HTML_BREAKS = /<br\s*\/?>|<\/(?:p|div|h[1-6]|li|tr|td|th|pre|summary|details|blockquote)>/gi;

export async function documentText(target: string, path: string): Promise<string> {
  switch (target) {
    case 'txt':
    case 'md':
    case 'rst':
      return readFile(path, 'utf8');
    case 'html':
      // The page's own head (its title and style) is not the document's text.
      return untagged((await readFile(path, 'utf8')).replace(/<head>[\s\S]*<\/head>/i, ''), HTML_BREAKS);
    case 'epub': {
      const zip = await openZip(path);
      const pages = zip.entries.filter((entry) => entry.endsWith('.xhtml') && !entry.endsWith('nav.xhtml'));
      return untagged((await zip.text(...pages)).replace(/<head>[\s\S]*?<\/head>/gi, ''), HTML_BREAKS);
    }
    case 'docx':
      return untagged(await (await openZip(path)).text('word/document.xml'), /<w:br\/>|<w:tab\/>|<\/w:p>/g);
    case 'odt':
      return untagged(await (await openZip(path)).text('content.xml'), /<text:line-break\/>|<text:tab\/>|<text:s\/>|<\/text:[ph]>/g);
    case 'rtf': {
      const pandoc = await pandocPath();
      if (!pandoc) throw new Error('reading an RTF result needs pandoc');
      return (await run(pandoc, ['--quiet', '--from=rtf', '--to=plain', '--wrap=none', path], { maxBuffer: 64 * 1024 * 1024 })).stdout;
    }
    case 'pdf':
      return (await pdfPageTexts(path)).join('\n');
    default:
      throw new Error(`no reader for a ${target} result: add one`);
  }
}
