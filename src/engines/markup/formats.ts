import type { FormatInfo, OptionDescriptor } from '../pairs.ts';

/** Markup and word-processor documents pandoc reads. */
export const MARKUP_SOURCES = ['md', 'html', 'docx', 'odt', 'epub', 'rst', 'org', 'latex', 'txt'] as const;
/** What it writes. No pdf: that needs a typesetter, and comes through LibreOffice in a chain. */
export const MARKUP_TARGETS = ['html', 'docx', 'odt', 'epub', 'md', 'rst', 'txt', 'rtf'] as const;

export type MarkupSource = (typeof MARKUP_SOURCES)[number];
export type MarkupTarget = (typeof MARKUP_TARGETS)[number];

/**
 * Pairs this engine leaves to another: md -> html stays with the data engine (markdown-it, the
 * same rendering it always gave, sanitised); between word processors' formats and from them to
 * text LibreOffice keeps more of the layout (the office engine's pairs).
 */
export const PAIRS_LEFT_TO_OTHERS: ReadonlySet<string> = new Set(['md->html', 'docx->odt', 'odt->docx', 'docx->txt', 'odt->txt']);

/**
 * The only sources pandoc writes RTF from: those that hold no formulas (GitHub's Markdown has no
 * math, plain text none). pandoc's RTF writer prints TeX math as its source, so LaTeX, Org, rst,
 * HTML and the word processors' formats keep the chain through a docx and LibreOffice, whose Math
 * module writes formulas as formulas. For the two here the chain cost 10-30 times pandoc's own
 * RTF (a 1 MB Markdown: LibreOffice spent 9-14 s of CPU opening the intermediate docx, pandoc's
 * RTF writer 2 s in all) for the same words.
 */
export const RTF_SOURCES: ReadonlySet<MarkupSource> = new Set(['md', 'txt']);

/**
 * pandoc's reader for each source. Markdown is read as GitHub's (CommonMark with GitHub's
 * extensions: what `md` means everywhere in convd, and a parser without pathological cases).
 * Plain text has no pandoc reader: the engine writes it as pandoc's own document (JSON) first
 * (text-source.ts), which pandoc reads without parsing anything.
 */
export const READERS: Record<MarkupSource, string> = {
  md: 'gfm', html: 'html', docx: 'docx', odt: 'odt', epub: 'epub', rst: 'rst', org: 'org', latex: 'latex', txt: 'json',
};

/** pandoc's writer for each target: md is written GitHub-flavoured, txt as plain text. */
export const WRITERS: Record<MarkupTarget, string> = {
  html: 'html5', docx: 'docx', odt: 'odt', epub: 'epub3', md: 'gfm', rst: 'rst', txt: 'plain', rtf: 'rtf',
};

/**
 * Targets pandoc assembles from its own data files (a reference document, a stylesheet): in its
 * sandbox it can read them only when they are handed to it (markup-engine.ts, pandoc.ts).
 */
export const PACKAGED_TARGETS: ReadonlySet<MarkupTarget> = new Set(['docx', 'odt', 'epub']);

export const MARKUP_FORMATS: FormatInfo[] = [
  { key: 'md', extensions: ['md', 'markdown'], mime: 'text/markdown' },
  { key: 'html', extensions: ['html', 'htm'], mime: 'text/html' },
  { key: 'docx', extensions: ['docx'], mime: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document' },
  { key: 'odt', extensions: ['odt'], mime: 'application/vnd.oasis.opendocument.text' },
  { key: 'epub', extensions: ['epub'], mime: 'application/epub+zip' },
  { key: 'rst', extensions: ['rst'], mime: 'text/x-rst' },
  { key: 'org', extensions: ['org'], mime: 'text/x-org' },
  { key: 'latex', extensions: ['tex', 'latex', 'ltx'], mime: 'application/x-tex' },
  { key: 'txt', extensions: ['txt', 'text'], mime: 'text/plain' },
  // A target only (RTF_SOURCES), named here too so that it is known where LibreOffice is not.
  { key: 'rtf', extensions: ['rtf'], mime: 'application/rtf' },
];

/** Targets whose text pandoc lays out in lines (`wrap`). */
const TEXT_TARGETS: ReadonlySet<MarkupTarget> = new Set(['md', 'rst', 'txt']);
/** Targets pandoc numbers headings in (its --number-sections: HTML, EPUB, Word). */
const NUMBERED_TARGETS: ReadonlySet<MarkupTarget> = new Set(['html', 'docx', 'epub', 'rtf']);
/**
 * Of those, the ones whose writer ignores --number-sections (RTF): the engine numbers their
 * headings itself with a filter (job-files.ts NUMBER_FILTER), as the other writers would.
 */
export const NUMBERED_BY_FILTER: ReadonlySet<MarkupTarget> = new Set(['rtf']);

/** pandoc's --wrap for each value of the `wrap` option (the command line gets these, never the value as sent). */
export const WRAP_ARGUMENTS: Record<string, string> = { auto: '--wrap=auto', none: '--wrap=none', preserve: '--wrap=preserve' };

export function markupOptions(target: MarkupTarget): OptionDescriptor[] {
  const options: OptionDescriptor[] = [
    { name: 'toc', type: 'bool', values: [], default: false, label: 'Insert a table of contents' },
  ];
  if (NUMBERED_TARGETS.has(target)) {
    options.push({ name: 'number_sections', type: 'bool', values: [], default: false, label: 'Number the headings (1, 1.1, 1.2, ...)' });
  }
  if (TEXT_TARGETS.has(target)) {
    options.push({
      name: 'wrap', type: 'enum', values: Object.keys(WRAP_ARGUMENTS), default: 'auto',
      label: 'Line wrapping: auto (at 72 columns), none (a paragraph on one line), preserve (the source\'s line breaks)',
    });
  }
  return options;
}
