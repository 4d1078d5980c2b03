import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setImmediate as turn } from 'node:timers/promises';
import type { Entry, Options, ZipFile as ZipReader } from 'yauzl';
import { ZipFile as ZipWriter } from 'yazl';
import { entryBytes, entryStream, nextEntry, openZipFile } from '../../inputs/zip-entries.ts';

/**
 * Text boxes of a Word document, for pandoc: its docx reader (2.17) drops a text box whole, so a
 * business card, a flyer or a letterhead whose words sit in text boxes came out of docx -> md,
 * html, rst or epub (and odt -> them, which goes through docx) as an empty document. Before pandoc
 * reads the file, each text box's paragraphs are copied after the paragraph that anchors it, in
 * document order: the words are kept, the box's position on the page is not (these targets have
 * none). The drawing stays where it was, which pandoc goes on ignoring.
 */

/** The document part of a docx. */
const DOCUMENT_PART = 'word/document.xml';
/**
 * Larger document parts are left as they are (pandoc's own heap limit judges them): the part is
 * held in memory while it is walked (a 300-page report's is a few MiB).
 */
const MAX_DOCUMENT_BYTES = 16 * 1024 * 1024;
/**
 * The walk runs on the daemon's event loop (16 MiB of tag-dense XML in about 250 ms): it lets
 * others' work run every this many tags.
 */
const TAGS_BETWEEN_TURNS = 4096;
/** A package of more parts than this is no document to rewrite (real ones hold a few dozen). */
const MAX_ENTRIES = 20_000;
/** A package whose parts unpack to more than this is handed to pandoc as it is. */
const MAX_PACKAGE_BYTES = 512 * 1024 * 1024;
/** Text boxes inside text boxes: each pass brings one level out. */
const MAX_PASSES = 4;

/** The elements the walk follows: paragraphs, text boxes' contents, and the Fallback copies to skip. */
const TAG = /<(\/?)(w:p|w:txbxContent|mc:Fallback)(?=[\s/>])[^>]*?(\/?)>/g;

/**
 * The document part with every text box's paragraphs (and tables) moved after the outermost
 * paragraph that holds it, or null when it holds none. A text box written twice (Word's
 * `mc:AlternateContent`: the drawing as `mc:Choice`, the same box in VML as `mc:Fallback`) is
 * taken once, from the Choice; a VML box alone (older files) is taken too.
 */
export async function withTextBoxesInline(xml: string): Promise<string | null> {
  if (!xml.includes('<w:txbxContent')) return null;
  let current = xml;
  let changed = false;
  for (let pass = 0; pass < MAX_PASSES; pass++) {
    const next = await onePass(current);
    if (next === null) break;
    current = next;
    changed = true;
  }
  return changed ? current : null;
}

interface Edit {
  /** Where the text is cut from (a box's content) or put (after its paragraph). */
  from: number;
  to: number;
  text: string;
}

/**
 * One level of text boxes brought out, or null when there was none. Each box outside any other
 * is emptied where it is and its content put after its outermost paragraph; boxes inside it come
 * out with that content, to be brought out by the next pass.
 */
async function onePass(xml: string): Promise<string | null> {
  const open: { name: string; contentStart: number }[] = [];
  const edits: Edit[] = [];
  // The boxes of the paragraph being walked: emptied only once their content has a place.
  let pending: string[] = [];
  let pendingCuts: Edit[] = [];
  let fallbackDepth = 0;
  let tags = 0;
  for (const match of xml.matchAll(TAG)) {
    if (++tags % TAGS_BETWEEN_TURNS === 0) await turn();
    const [whole, closing, name, selfClosing] = match as unknown as [string, string, string, string];
    const index = match.index!;
    if (selfClosing) continue;
    if (name === 'mc:Fallback') {
      fallbackDepth += closing ? -1 : 1;
      continue;
    }
    if (fallbackDepth > 0) continue;
    if (!closing) {
      open.push({ name, contentStart: index + whole.length });
      continue;
    }
    const at = findLast(open, name);
    if (at < 0) return null; // not well formed: left to pandoc as it is
    const element = open[at]!;
    open.length = at;
    if (name === 'w:txbxContent') {
      const content = xml.slice(element.contentStart, index);
      if (open.some((entry) => entry.name === 'w:txbxContent') || !content.includes('<w:')) continue;
      pending.push(content);
      pendingCuts.push({ from: element.contentStart, to: index, text: '' });
    } else if (pending.length > 0 && !open.some((entry) => entry.name === 'w:p')) {
      const end = index + whole.length;
      edits.push(...pendingCuts, { from: end, to: end, text: pending.join('') });
      pending = [];
      pendingCuts = [];
    }
  }
  if (edits.length === 0) return null;
  let result = '';
  let from = 0;
  for (const edit of edits) {
    result += xml.slice(from, edit.from) + edit.text;
    from = edit.to;
  }
  return result + xml.slice(from);
}

function findLast(open: readonly { name: string }[], name: string): number {
  for (let at = open.length - 1; at >= 0; at--) if (open[at]!.name === name) return at;
  return -1;
}

const ZIP_OPTIONS: Options = { lazyEntries: true, autoClose: false, decodeStrings: true, validateEntrySizes: true, strictFileNames: false };

/**
 * Writes `outputPath`, the docx at `inputPath` with its text boxes' paragraphs inline
 * (withTextBoxesInline), and returns true; false, leaving nothing at `outputPath`, when it has
 * none, or when it is not a package this can read whole (pandoc then reads the file as it is,
 * and says what is wrong with it) or too large. Rejects only with the signal's reason. The zip
 * is opened once: its central directory read, the document part unpacked and, where it changed,
 * every part copied from the entries read.
 */
export async function docxWithTextBoxesInline(inputPath: string, outputPath: string, signal: AbortSignal): Promise<boolean> {
  let reader: ZipReader;
  try {
    reader = await openZipFile(inputPath, ZIP_OPTIONS);
  } catch {
    return false;
  }
  let writing = false;
  try {
    const entries = await entriesOf(reader);
    const documentEntry = entries?.find((entry) => entry.fileName === DOCUMENT_PART);
    if (!entries || !documentEntry || documentEntry.uncompressedSize > MAX_DOCUMENT_BYTES) return false;
    const rewritten = await withTextBoxesInline((await entryBytes(reader, documentEntry)).toString('utf8'));
    signal.throwIfAborted();
    if (rewritten === null) return false;
    writing = true;
    await writePackage(reader, entries, outputPath, rewritten, signal);
    return true;
  } catch {
    if (writing) await rm(outputPath, { force: true });
    if (signal.aborted) throw signal.reason;
    return false;
  } finally {
    reader.close();
  }
}

/** The package's entries, or null when it has too many or unpacks to too much. */
async function entriesOf(reader: ZipReader): Promise<Entry[] | null> {
  const entries: Entry[] = [];
  let total = 0;
  for (let entry = await nextEntry(reader); entry; entry = await nextEntry(reader)) {
    total += entry.uncompressedSize;
    entries.push(entry);
    if (entries.length > MAX_ENTRIES || total > MAX_PACKAGE_BYTES) return null;
  }
  return entries;
}

/** The package's entries copied to `outputPath`, its document part replaced by `document`. */
async function writePackage(reader: ZipReader, entries: readonly Entry[], outputPath: string, document: string, signal: AbortSignal): Promise<void> {
  const writer = new ZipWriter();
  const written = pipeline(writer.outputStream, createWriteStream(outputPath), { signal });
  try {
    for (const entry of entries) {
      signal.throwIfAborted();
      if (entry.fileName === DOCUMENT_PART) writer.addBuffer(Buffer.from(document, 'utf8'), entry.fileName);
      else if (entry.fileName.endsWith('/')) writer.addEmptyDirectory(entry.fileName);
      else {
        const stream = await entryStream(reader, entry);
        const done = new Promise<void>((resolve, reject) => stream.on('end', resolve).on('error', reject));
        // Media is stored compressed already; the XML parts deflate well.
        writer.addReadStream(stream, entry.fileName, { compress: entry.compressionMethod !== 0 });
        await done;
      }
    }
    writer.end();
    await written;
  } catch (error) {
    // yazl's types call it a NodeJS.ReadableStream; it is a Readable, which can be ended this way.
    (writer.outputStream as unknown as Readable).destroy();
    await written.catch(() => undefined);
    throw error;
  }
}
