import { createReadStream, createWriteStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { decodeTextChunks, readTextFile } from '../data/utf8.ts';

/** A line longer than this is written out in pieces, never held whole. */
const MAX_HELD_CHARS = 64 * 1024;
/** What HTML counts as white space between words (the text was read as HTML before: same words, same breaks). */
const WHITE_SPACE = /[ \t\n\f\r]+/;

/**
 * Plain text as pandoc's own document: a blank line ends a paragraph, the lines of a paragraph
 * stay lines (LineBreak), words are Str and a run of white space one Space, as pandoc's HTML
 * reader made of the same text written as HTML paragraphs with `<br>`, which it did before.
 * pandoc's JSON reader parses no markup: on a 1 MB text the whole conversion takes 30-40 % less
 * than through its HTML reader. Elements are written as they come; nothing but the current
 * line's unfinished word is held.
 */
class Paragraphs {
  private open = false;
  /** The current line was started in pieces (it was too long to hold). */
  private lineStarted = false;
  /** An element was written in the open paragraph (the next one needs a comma). */
  private inlines = 0;
  private blocks = 0;
  private pending = '';

  /** JSON for a chunk of text. */
  push(text: string): string {
    const lines = (this.pending + text).split('\n');
    this.pending = lines.pop() ?? '';
    let json = lines.map((line) => this.endLine(line)).join('');
    if (this.pending.length > MAX_HELD_CHARS && this.pending.trim() !== '') {
      // Up to the last white space, so that no word is cut in two (a line without any is cut where it is).
      const cut = Math.max(this.pending.search(/[ \t\f\r][^ \t\f\r]*$/), 0) || this.pending.length;
      json += this.startLine() + this.words(this.pending.slice(0, cut));
      this.pending = this.pending.slice(cut);
    }
    return json;
  }

  end(): string {
    const last = this.endLine(this.pending);
    return last + (this.open ? ']}' : '');
  }

  private inline(element: string): string {
    return (this.inlines++ > 0 ? ',' : '') + element;
  }

  /** Str for each word, Space between them and for white space at either end (pandoc trims a paragraph's own). */
  private words(text: string): string {
    let json = '';
    const words = text.split(WHITE_SPACE);
    words.forEach((word, index) => {
      if (index > 0) json += this.inline('{"t":"Space"}');
      if (word) json += this.inline(`{"t":"Str","c":${JSON.stringify(word)}}`);
    });
    return json;
  }

  private startLine(): string {
    if (this.lineStarted) return '';
    this.lineStarted = true;
    if (this.open) return this.inline('{"t":"LineBreak"}');
    this.open = true;
    this.inlines = 0;
    return `${this.blocks++ > 0 ? ',' : ''}{"t":"Para","c":[`;
  }

  private endLine(line: string): string {
    const content = line.trim();
    if (!this.lineStarted && content === '') {
      const close = this.open ? ']}' : '';
      this.open = false;
      return close;
    }
    // Spaces that start or end a line go, as they did in HTML beside a <br>.
    const json = this.startLine() + this.words(this.lineStarted && this.inlines > 0 ? line.trimEnd() : content);
    this.lineStarted = false;
    return json;
  }
}

/**
 * pandoc has no reader for plain text (its Markdown reader would take `*`, `#` or four spaces
 * as markup), so the text goes to it as its own document, JSON of the pandoc types version
 * `apiVersion` (the one this pandoc writes: pandoc.ts pandocApiVersion). Streamed; UTF-8, or
 * Windows-1252 where the file is not UTF-8 (data/utf8.ts textEncodingOf).
 */
export async function writeTextAsPandocJson(inputPath: string, jsonPath: string, apiVersion: readonly number[], signal: AbortSignal): Promise<void> {
  await pipeline(
    async function* (): AsyncGenerator<string> {
      const paragraphs = new Paragraphs();
      yield `{"pandoc-api-version":${JSON.stringify(apiVersion)},"meta":{},"blocks":[`;
      for await (const text of readTextFile(inputPath, 'text file')) yield paragraphs.push(text);
      yield `${paragraphs.end()}]}\n`;
    },
    createWriteStream(jsonPath),
    { signal },
  );
}

/**
 * A Markdown, rst, Org or LaTeX file that is not UTF-8, written as UTF-8 for pandoc, which reads
 * UTF-8 only ("Cannot decode byte"): older text in Latin-1 or Windows-1252 (data/utf8.ts).
 */
export async function writeWindows1252AsUtf8(inputPath: string, outputPath: string, what: string, signal: AbortSignal): Promise<void> {
  await pipeline(
    createReadStream(inputPath),
    (chunks: AsyncIterable<Buffer>) => decodeTextChunks(chunks, 'windows-1252', what),
    createWriteStream(outputPath),
    { signal },
  );
}

/** Something a reader may take for raw HTML: `<` and a tag's name, `/`, `!` (a comment) or `?`. */
export const TAG_START = /<[A-Za-z/!?]/;

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
