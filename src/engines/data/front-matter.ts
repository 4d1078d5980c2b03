import { parseDocument } from 'yaml';

/**
 * A Markdown file's YAML metadata block (`---` on its first line, the block ending with `---` or
 * `...`), as pandoc reads one and the other engines' results of the same file show it: its
 * title, authors and date head the document, and the block itself is not text. markdown-it knows
 * none: it drew the first `---` as a rule and the keys as a paragraph (a JOSS paper's tags, ORCID
 * and bibliography file at the top of its PDF).
 */
export interface FrontMatter {
  title?: string;
  authors: string[];
  date?: string;
  /** The Markdown after the block. */
  body: string;
  /** Lines the block took, for line numbers in the rest. */
  lines: number;
}

/** A block longer than this is read as Markdown (metadata is a few lines). */
const MAX_BLOCK_CHARS = 64 * 1024;
const OPENING = /^---[ \t]*\r?\n/;
const CLOSING = /^(?:---|\.\.\.)[ \t]*$/m;

/** The block at the start of `source`, or null when there is none or it is not a YAML mapping. */
export function frontMatterOf(source: string): FrontMatter | null {
  const opening = OPENING.exec(source);
  if (!opening) return null;
  const rest = source.slice(opening[0].length, opening[0].length + MAX_BLOCK_CHARS);
  const closing = CLOSING.exec(rest);
  if (!closing) return null;
  let value: unknown;
  try {
    const document = parseDocument(rest.slice(0, closing.index), { uniqueKeys: false });
    if (document.errors.length > 0) return null;
    // No alias is expanded (0: any one throws): a block of a few lines has no use for them.
    value = document.toJS({ maxAliasCount: 0 });
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const meta = value as Record<string, unknown>;
  const end = opening[0].length + closing.index + closing[0].length;
  const body = source.slice(end).replace(/^\r?\n/, '');
  const title = text(meta.title);
  const date = text(meta.date);
  return {
    ...(title ? { title } : {}),
    authors: listOf(meta.author ?? meta.authors).map(text).filter((name): name is string => name !== undefined),
    ...(date ? { date } : {}),
    body,
    lines: source.slice(0, source.length - body.length).split('\n').length - 1,
  };
}

function listOf(value: unknown): unknown[] {
  if (value === undefined || value === null) return [];
  return Array.isArray(value) ? value : [value];
}

/** A scalar as text, or an author given as `{name: ...}`. */
function text(value: unknown): string | undefined {
  if (typeof value === 'string') return value.trim() || undefined;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value instanceof Date) return value.toISOString().slice(0, 10);
  if (typeof value === 'object' && value !== null && 'name' in value) return text((value as { name: unknown }).name);
  return undefined;
}
