import { open } from 'node:fs/promises';
import type { ConversionWarning } from '../../model/conversion.ts';
import { leftOutWarning, MAX_LEFT_OUT_WARNINGS, type LeftOutWarning } from '../left-out.ts';

/**
 * What pandoc's sandbox left out of a document, read from its log (`--log`, JSON, written
 * whatever `--quiet` says). A document may name other files: rst's `include` directive, LaTeX's
 * `\input`, Org's `#+INCLUDE`, an image by path or address in a Word, OpenDocument or EPUB result.
 * The sandbox reads none of them (no path from a document to the server's files or network), and
 * pandoc goes on without them: the result is missing that part, which the user is told of rather
 * than left to find.
 */

/** One entry of pandoc's log; only the fields read here. */
interface LogEntry {
  type?: unknown;
  path?: unknown;
}

/**
 * How much of the log is read: its first entries are the ones told, and a document of a million
 * includes makes a log of a hundred megabytes (pandoc's heap limit bounds it, not this process's).
 */
export const MAX_LOG_BYTES = 1024 * 1024;
/** Where an entry of pandoc's log ends (it writes the array indented by four spaces). */
const ENTRY_END = '\n    }';

/**
 * The head of pandoc's log as JSON: all of it when it is short, else its entries up to the last
 * whole one within MAX_LOG_BYTES; '' when there is none.
 */
export async function readLogHead(path: string): Promise<string> {
  let file;
  try {
    file = await open(path, 'r');
  } catch {
    return '';
  }
  try {
    // As much as there is: most logs are a few bytes ("[]"), and every pandoc run writes one.
    const wanted = Math.min((await file.stat()).size, MAX_LOG_BYTES);
    const { buffer, bytesRead } = await file.read(Buffer.alloc(wanted), 0, wanted, 0);
    const text = buffer.toString('utf8', 0, bytesRead);
    if (bytesRead < MAX_LOG_BYTES) return text;
    const end = text.lastIndexOf(ENTRY_END);
    return end < 0 ? '' : `${text.slice(0, end + ENTRY_END.length)}\n]`;
  } finally {
    await file.close();
  }
}

/**
 * The warnings for the log's entries; `ownPaths`: what the engine itself names on pandoc's command
 * line and pandoc reports as not fetched (the epub writer looks for fonts in the
 * `--epub-embed-font` directory and logs it as a resource it could not fetch, for every epub).
 */
export function leftOutOf(log: string, ownPaths: ReadonlySet<string> = new Set()): ConversionWarning[] {
  let entries: unknown;
  try {
    entries = JSON.parse(log);
  } catch {
    return [];
  }
  if (!Array.isArray(entries)) return [];
  const warnings: ConversionWarning[] = [];
  const seen = new Set<string>();
  for (const entry of entries as LogEntry[]) {
    if (typeof entry === 'object' && entry !== null && typeof entry.path === 'string' && ownPaths.has(entry.path)) continue;
    const warning = warningFor(entry);
    if (!warning || seen.has(warning.reference)) continue;
    seen.add(warning.reference);
    warnings.push(warning);
    if (warnings.length === MAX_LEFT_OUT_WARNINGS) break;
  }
  return warnings;
}

function warningFor(entry: LogEntry): LeftOutWarning | null {
  if (typeof entry !== 'object' || entry === null || typeof entry.path !== 'string' || entry.path === '') return null;
  // Not the line pandoc gives: it counts past the directive (rst's include on line 4 is "line 6").
  if (entry.type === 'CouldNotLoadIncludeFile') {
    return leftOutWarning(entry.path, (shown) => `The document includes "${shown}", which is not read here: only the file sent is converted, so what that file holds is left out.`);
  }
  if (entry.type === 'CouldNotFetchResource') {
    return leftOutWarning(entry.path, (shown) => `The document shows "${shown}", which is not fetched here: only the file sent is converted, so it is left out (its description kept where it has one).`);
  }
  return null;
}
