/**
 * The page count Word saw, from a .docx's docProps/app.xml, when Word is the program that saved
 * the file last. Word writes `<Pages>` (and the other statistics) on every save; a program that
 * rewrites a package keeps the app.xml it found, so its `<Pages>` then describes another text
 * (pandoc's and python-docx's templates carry a Word app.xml of one page), or another program's
 * layout when that program writes its own (LibreOffice does). A file counts as Word's when:
 *   - app.xml's `<Application>` is Word's: "Microsoft Office Word", "Microsoft Word ..." or
 *     "Microsoft Macintosh Word" (not LibreOffice, Outlook's editor, or no name);
 *   - docProps/core.xml is as Word writes it on every save: `cp:coreProperties` with
 *     `cp:lastModifiedBy` and `cp:revision`. pandoc writes a core.xml without either, and Apache
 *     POI's package layer one without the `cp:` prefix, while keeping Word's app.xml.
 * A library that edits a Word file and keeps both parts as they were (python-docx does) is not
 * caught: `words` (app.xml's `<Words>` against a count of the text) hints at such an edit.
 */
import { countWords, documentText } from './word-count.ts';
import { zipTexts } from './zip-texts.ts';

export type WordPages =
  | { kind: 'word'; pages: number; application: string; words: { word: number | null; counted: number } }
  | { kind: 'no-page-count'; application: string }
  | { kind: 'not-word'; application: string; reason: string }
  | { kind: 'unreadable'; reason: string };

const PROPERTIES = new Set(['_rels/.rels', 'docProps/app.xml', 'docProps/core.xml']);
const MAIN_PART = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument';
const WORD_APPLICATION = /^Microsoft (?:Office |Macintosh )?Word\b/;

function element(xml: string, name: string): string | null {
  const match = new RegExp(`<${name}>([^<]*)</${name}>`).exec(xml);
  return match ? match[1]!.trim() : null;
}

function coreIsWords(core: string | undefined): string | null {
  if (core === undefined) return 'no docProps/core.xml';
  if (!/<cp:coreProperties\b/.test(core)) return 'core.xml not as Word writes it (no cp:coreProperties)';
  if (!/<cp:lastModifiedBy\b/.test(core) || !/<cp:revision\b/.test(core)) return 'core.xml not as Word writes it (no cp:lastModifiedBy or cp:revision)';
  return null;
}

/** The main document part's name, as the package's relationships give it (Word Online names it word/document2.xml and the like). */
function mainPart(rels: string | undefined): string {
  for (const relationship of rels?.match(/<Relationship\b[^>]*>/g) ?? []) {
    if (!relationship.includes(`Type="${MAIN_PART}"`)) continue;
    const target = /Target="([^"]+)"/.exec(relationship)?.[1];
    if (target) return target.replace(/^\//, '');
  }
  return 'word/document.xml';
}

export async function wordPages(data: Buffer): Promise<WordPages> {
  let parts: Map<string, string>;
  let main: string;
  try {
    parts = await zipTexts(data, (name) => PROPERTIES.has(name));
    main = mainPart(parts.get('_rels/.rels'));
    for (const [name, text] of await zipTexts(data, (name) => name === main)) parts.set(name, text);
  } catch (error) {
    return { kind: 'unreadable', reason: `not a readable zip (${error instanceof Error ? error.message : String(error)})` };
  }
  const document = parts.get(main);
  if (document === undefined) return { kind: 'unreadable', reason: `no ${main}` };
  const app = parts.get('docProps/app.xml') ?? '';
  const application = element(app, 'Application') ?? '';
  const pages = Number(element(app, 'Pages') ?? 0);
  if (!Number.isInteger(pages) || pages <= 0) return { kind: 'no-page-count', application };
  if (!WORD_APPLICATION.test(application)) return { kind: 'not-word', application, reason: `written by ${application || 'an unnamed program'}` };
  const notWords = coreIsWords(parts.get('docProps/core.xml'));
  if (notWords) return { kind: 'not-word', application, reason: notWords };
  const word = element(app, 'Words');
  return { kind: 'word', pages, application, words: { word: word === null ? null : Number(word), counted: countWords(documentText(document)) } };
}
