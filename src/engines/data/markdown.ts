import { tasklist } from '@mdit/plugin-tasklist';
import MarkdownIt from 'markdown-it';
import sanitizeHtml from 'sanitize-html';
import { ConversionFailure } from '../../errors/api-error.ts';
import { frontMatterOf, type FrontMatter } from './front-matter.ts';

/**
 * markdown-it stops at this depth of nested blocks (a list level is two: the list and its item)
 * and drops whatever is deeper and everything after it, without a word: a document that reaches
 * it is refused instead. 1,000 holds a list 400 columns deep, as the pandoc route does.
 */
const MAX_NESTING = 1000;

/**
 * One parser with GitHub's extensions (tables, strikethrough, autolinks, task lists); raw HTML in
 * the source is sanitised afterwards. markdown-it rather than marked: its inline parser is linear
 * in the input (CommonMark's delimiter algorithm) and its nesting is bounded, where marked took
 * 148 s for 700 KB of `*a` and overflowed its stack on `*` x 100,000 + `a` + `*` x 100,000.
 */
const markdown = new MarkdownIt({ html: true, linkify: true }).use(tasklist, { disabled: true, label: false });
// An option markdown-it reads, which its type declarations leave out.
Object.assign(markdown.options, { maxNesting: MAX_NESTING });

/**
 * What survives in the HTML: text structure, tables, code, links and images over http(s) and
 * mailto. Scripts, styles, iframes, forms, event handlers and javascript:/data: URLs do not.
 */
const SANITIZE: sanitizeHtml.IOptions = {
  allowedTags: [
    ...sanitizeHtml.defaults.allowedTags.filter((tag) => tag !== 'style'),
    'img', 'del', 'ins', 'sup', 'sub', 'details', 'summary', 'input',
  ],
  allowedAttributes: {
    // rel is always overwritten by the transform below.
    a: ['href', 'title', 'name', 'rel'],
    img: ['src', 'alt', 'title', 'width', 'height'],
    th: ['align', 'colspan', 'rowspan'],
    td: ['align', 'colspan', 'rowspan'],
    ol: ['start'],
    code: ['class'],
    // GFM task lists render as disabled checkboxes.
    input: ['type', 'checked', 'disabled'],
    h1: ['id'], h2: ['id'], h3: ['id'], h4: ['id'], h5: ['id'], h6: ['id'],
    details: ['open'],
  },
  allowedSchemes: ['http', 'https', 'mailto'],
  allowedSchemesAppliedToAttributes: ['href', 'src'],
  allowProtocolRelative: false,
  allowedClasses: { code: [/^language-[\w-]+$/] },
  exclusiveFilter: (frame) => frame.tag === 'input' && frame.attribs.type !== 'checkbox',
  transformTags: {
    a: sanitizeHtml.simpleTransform('a', { rel: 'noopener noreferrer nofollow' }),
    // Open, so that a page printed (md -> pdf, png) shows what a <details> holds, as pandoc's
    // targets of the same Markdown do (docx, odt, txt: src/engines/markup/job-files.ts).
    details: sanitizeHtml.simpleTransform('details', { open: '' }),
  },
};

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' };

function escapeHtml(text: string): string {
  return text.replace(/[&<>"]/g, (char) => ESCAPES[char] ?? char);
}

/**
 * A plain, readable page (what a README looks like on a forge), in the page itself so that it
 * prints the same from a browser and from the HTML engine, with no font or file to fetch.
 */
const PAGE_STYLE = [
  'body{font-family:"DejaVu Sans","Liberation Sans",Helvetica,Arial,sans-serif;line-height:1.5;max-width:46em;margin:2em auto;padding:0 1em;color:#1f2328}',
  'h1,h2{border-bottom:1px solid #d1d9e0;padding-bottom:.3em}',
  'code,pre{font-family:"DejaVu Sans Mono","Liberation Mono",monospace;font-size:.9em;background:#f6f8fa}',
  'pre{padding:1em;overflow:auto;white-space:pre-wrap}',
  'table{border-collapse:collapse}th,td{border:1px solid #d1d9e0;padding:.3em .8em}',
  'blockquote{margin:0;padding:0 1em;color:#59636e;border-left:.25em solid #d1d9e0}',
  'img{max-width:100%}',
  '@media print{body{margin:0;max-width:none}pre,table,img{break-inside:avoid}}',
].join('');

/** Markdown -> sanitised HTML; a complete page (title from the first heading) unless `fullDocument` is false. */
export function markdownToHtml(source: string, fullDocument: boolean): string {
  const env = {};
  const front = frontMatterOf(source);
  const tokens = markdown.parse(front ? front.body : source, env);
  refuseTooDeep(tokens, front?.lines ?? 0);
  const rendered = markdown.renderer.render(tokens, markdown.options, env);
  const body = sanitizeHtml((front ? titleBlock(front) : '') + rendered, SANITIZE);
  if (!fullDocument) return body;
  const heading = /<h1[^>]*>([\s\S]*?)<\/h1>/.exec(body)?.[1];
  const title = heading ? sanitizeHtml(heading, { allowedTags: [], allowedAttributes: {} }).trim() : 'Document';
  return [
    '<!doctype html>',
    '<html>',
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${escapeHtml(decodeEntities(title))}</title>`,
    `<style>${PAGE_STYLE}</style>`,
    '</head>',
    '<body>',
    body.trimEnd(),
    '</body>',
    '</html>',
    '',
  ].join('\n');
}

/**
 * The metadata block's title (its Markdown, as pandoc reads it), authors and date, as pandoc's
 * standalone page heads the document with them; nothing when the block names none.
 */
function titleBlock(front: FrontMatter): string {
  const parts = [
    ...(front.title ? [`<h1>${markdown.renderInline(front.title)}</h1>`] : []),
    ...front.authors.map((author) => `<p>${escapeHtml(author)}</p>`),
    ...(front.date ? [`<p>${escapeHtml(front.date)}</p>`] : []),
  ];
  return parts.length > 0 ? `<header>${parts.join('')}</header>\n` : '';
}

/** `skipped`: lines before the Markdown parsed (a metadata block), for the line number told. */
function refuseTooDeep(tokens: ReturnType<MarkdownIt['parse']>, skipped: number): void {
  // Blocks only: emphasis gets its levels after the parse, where no limit applies (100,000 `*`
  // around a word are 50,000 nested <strong>, all kept).
  let line = 1 + skipped;
  for (const token of tokens) {
    if (token.map) line = token.map[0] + 1 + skipped;
    if (token.level < MAX_NESTING - 2) continue;
    throw new ConversionFailure('input_invalid', `Line ${line}: lists or quotes are nested more than ${MAX_NESTING / 2} levels deep here, deeper than Markdown is converted.`);
  }
}

/** The heading text comes out entity-encoded; decode the few entities sanitize-html writes before re-escaping. */
function decodeEntities(text: string): string {
  return text.replace(/&(amp|lt|gt|quot|#39);/g, (_, name: string) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" })[name] ?? '');
}
