import { createReadStream, createWriteStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { readUtf8Chunks } from '../data/utf8.ts';

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;' };
/** A line longer than this is written out in pieces, never held whole. */
const MAX_HELD_CHARS = 64 * 1024;

function escapeHtml(text: string): string {
  return text.replace(/[&<>]/g, (char) => ESCAPES[char] ?? char);
}

/**
 * Plain text as HTML paragraphs: a blank line ends a paragraph, the lines of a paragraph stay
 * lines (`<br>`), everything escaped.
 */
class Paragraphs {
  private open = false;
  /** The current line was started in pieces (it was too long to hold). */
  private lineStarted = false;
  private pending = '';

  /** HTML for a chunk of text. */
  push(text: string): string {
    const lines = (this.pending + text).split('\n');
    this.pending = lines.pop() ?? '';
    let html = lines.map((line) => this.endLine(line)).join('');
    if (this.pending.length > MAX_HELD_CHARS && this.pending.trim() !== '') {
      html += this.startLine() + escapeHtml(this.pending);
      this.pending = '';
    }
    return html;
  }

  end(): string {
    const last = this.endLine(this.pending);
    return last + (this.open ? '</p>\n' : '');
  }

  private startLine(): string {
    if (this.lineStarted) return '';
    this.lineStarted = true;
    const start = this.open ? '<br>\n' : '<p>';
    this.open = true;
    return start;
  }

  private endLine(line: string): string {
    const content = line.endsWith('\r') ? line.slice(0, -1) : line;
    if (!this.lineStarted && content.trim() === '') {
      const close = this.open ? '</p>\n' : '';
      this.open = false;
      return close;
    }
    const html = this.startLine() + escapeHtml(content);
    this.lineStarted = false;
    return html;
  }
}

/**
 * pandoc has no reader for plain text (its Markdown reader would take `*`, `#` or four spaces
 * as markup), so the text goes to it as HTML. Streamed, and strict about UTF-8: bytes that are
 * not fail with input_invalid.
 */
export async function writeTextAsHtml(inputPath: string, htmlPath: string, signal: AbortSignal): Promise<void> {
  await pipeline(
    createReadStream(inputPath),
    async function* (chunks: AsyncIterable<Buffer>): AsyncGenerator<string> {
      const paragraphs = new Paragraphs();
      yield '<!DOCTYPE html>\n<html><head><meta charset="utf-8"></head><body>\n';
      for await (const text of readUtf8Chunks(chunks, 'text file')) yield paragraphs.push(text);
      yield `${paragraphs.end()}</body></html>\n`;
    },
    createWriteStream(htmlPath),
    { signal },
  );
}

/** Something a reader may take for raw HTML: `<` and a tag's name, `/`, `!` (a comment) or `?`. */
const TAG_START = /<[A-Za-z/!?]/;

/**
 * Whether a text file may hold raw HTML: it has a `<` followed by what starts a tag, somewhere
 * (a quick look that only decides whether the raw HTML filter runs: an autolink counts too).
 */
export async function mayHoldHtml(inputPath: string, signal: AbortSignal): Promise<boolean> {
  let last = '';
  for await (const chunk of createReadStream(inputPath, { encoding: 'latin1', signal })) {
    const text = last + (chunk as string);
    if (TAG_START.test(text)) return true;
    last = text.slice(-1);
  }
  return false;
}
