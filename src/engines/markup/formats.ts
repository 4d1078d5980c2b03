import type { FormatInfo, OptionDescriptor } from '../../formats/types.ts';

/** Markup and word-processor documents pandoc reads. */
export const MARKUP_SOURCES = ['md', 'html', 'docx', 'odt', 'epub', 'rst', 'org', 'latex', 'txt'] as const;
/** What it writes. No pdf: that needs a typesetter, and comes through LibreOffice in a chain. */
export const MARKUP_TARGETS = ['html', 'docx', 'odt', 'epub', 'md', 'rst', 'txt'] as const;

export type MarkupSource = (typeof MARKUP_SOURCES)[number];
export type MarkupTarget = (typeof MARKUP_TARGETS)[number];

/**
 * Pairs this engine leaves to another: md -> html stays with the data engine (markdown-it, the
 * same rendering it always gave, sanitised); between word processors' formats and from them to
 * text LibreOffice keeps more of the layout (the office engine's pairs).
 */
export const PAIRS_LEFT_TO_OTHERS: ReadonlySet<string> = new Set(['md->html', 'docx->odt', 'odt->docx', 'docx->txt', 'odt->txt']);

/**
 * pandoc's reader for each source. Markdown is read as GitHub's (CommonMark with GitHub's
 * extensions: what `md` means everywhere in convd, and a parser without pathological cases).
 * Plain text has no pandoc reader: the engine writes it as HTML paragraphs first (text-source.ts).
 */
export const READERS: Record<MarkupSource, string> = {
  md: 'gfm', html: 'html', docx: 'docx', odt: 'odt', epub: 'epub', rst: 'rst', org: 'org', latex: 'latex', txt: 'html',
};

/** pandoc's writer for each target: md is written GitHub-flavoured, txt as plain text. */
export const WRITERS: Record<MarkupTarget, string> = {
  html: 'html5', docx: 'docx', odt: 'odt', epub: 'epub3', md: 'gfm', rst: 'rst', txt: 'plain',
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
];

/** Targets whose text pandoc lays out in lines (`wrap`). */
const TEXT_TARGETS: ReadonlySet<MarkupTarget> = new Set(['md', 'rst', 'txt']);
/** Targets pandoc numbers headings in (its --number-sections: HTML, EPUB, Word). */
const NUMBERED_TARGETS: ReadonlySet<MarkupTarget> = new Set(['html', 'docx', 'epub']);

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
