import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ConversionFailure } from '../../src/errors/api-error.ts';
import { WRITERS } from '../../src/engines/markup/formats.ts';
import { createMarkupEngine } from '../../src/engines/markup/markup-engine.ts';
import { missingDataFile } from '../../src/engines/markup/pandoc.ts';
import { isOutputCapFailure } from '../../src/engines/output-cap.ts';
import { liveChildPids, runProcess } from '../../src/engines/subprocess.ts';
import type { EngineJob } from '../../src/engines/types.ts';
import { validateOptions } from '../../src/formats/options.ts';
import type { ConversionPair } from '../../src/engines/pairs.ts';
import type { ConversionOptions } from '../../src/model/conversion.ts';
import { childrenNamed, leftoversOfGroup } from '../helpers/engines-proc.ts';
import { storedZip } from '../helpers/hostile-files.ts';
import {
  DOCUMENT_HEADING, DOCUMENT_MARKER, assertMarkupOutput, makeMarkupFixture, openZip, pandocPath,
} from '../helpers/markup.ts';
import { rejectsWith } from '../helpers/failure.ts';

// The suite runs on the pandoc the engine finds (CONVD_PANDOC_PATH, else PATH). Without one it
// skips here, but fails under CI (CI=true), which installs pandoc: a broken install must not hide.
const engine = createMarkupEngine();
const status = await engine.probe();
const pairs = engine.pairs();
const pandoc = await pandocPath();
const unavailable = status.available ? undefined : `pandoc is not usable: ${status.detail ?? 'no detail'}`;
const skip = unavailable !== undefined && process.env.CI !== 'true' ? unavailable : false;
if (skip) console.log(`engines-markup: skipped: ${skip}`);

const SOURCES = ['md', 'html', 'docx', 'odt', 'epub', 'rst', 'org', 'latex', 'txt'];
const TARGETS = ['html', 'docx', 'odt', 'epub', 'md', 'rst', 'txt', 'rtf'];
/** The sources pandoc writes RTF from (no formulas in them: the others keep LibreOffice's RTF). */
const RTF_SOURCES = new Set(['md', 'txt']);

let dir: string;
let counter = 0;
const proven = new Set<string>();

function offered(source: string, target: string): boolean {
  return pairs.some((p) => p.source === source && p.target === target);
}

function pairOf(source: string, target: string): ConversionPair {
  const pair = pairs.find((p) => p.source === source && p.target === target);
  assert.ok(pair, `the markup engine offers ${source} -> ${target}`);
  return pair;
}

/** Options as the registry hands them over: validated against the pair, every default applied. */
function options(pair: ConversionPair, raw: Record<string, unknown> = {}): ConversionOptions {
  const outcome = validateOptions(pair, raw);
  assert.ok(outcome.ok, `options ${JSON.stringify(raw)} are valid for ${pair.source} -> ${pair.target}`);
  return outcome.options;
}

function job(source: string, target: string, inputPath: string, raw: Record<string, unknown> = {}, extra: Partial<EngineJob> = {}): EngineJob {
  return {
    inputPath, outputPath: join(dir, `out-${++counter}.${target}`), source, target, variant: null,
    options: options(pairOf(source, target), raw), signal: new AbortController().signal, onProgress: () => undefined, ...extra,
  };
}

/** Converts and returns the output path. */
async function convert(source: string, target: string, inputPath: string, raw: Record<string, unknown> = {}, extra: Partial<EngineJob> = {}): Promise<string> {
  const j = job(source, target, inputPath, raw, extra);
  await engine.convert(j);
  return j.outputPath;
}

function fixture(source: string): string {
  return join(dir, `fixture.${source}`);
}

async function input(name: string, content: string | Buffer): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, content);
  return path;
}

function assertNoPandoc(): void {
  assert.deepEqual(liveChildPids(), [], 'runProcess has no live child');
  assert.deepEqual(childrenNamed('pandoc'), [], 'no pandoc child of ours exists (running or zombie)');
}

/** No work directory is left beside the outputs. */
async function assertNoWorkDirs(): Promise<void> {
  assert.deepEqual((await readdir(dir)).filter((name) => name.includes('.pandoc-')), []);
}

function withoutTags(text: string): string {
  return text.replace(/<[^>]*>/g, '');
}

/**
 * 20,000 nested quotes: pandoc reads them in a second, but its EPUB (HTML) writer takes longer than
 * any time limit (over 20 s at 140 MB; to rst or plain text they exhaust the heap limit instead).
 */
const NESTED_QUOTES = `${'> '.repeat(20_000)}deep\n`;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'convd-markup-'));
  if (skip) return;
  // One fixture per source the engine offers (makeMarkupFixture fails for one without a recipe).
  await Promise.all([...new Set([...SOURCES, ...pairs.map((p) => p.source)])].map((source) => makeMarkupFixture(dir, source)));
});

after(async () => {
  console.log(`markup engine (pandoc ${status.version ?? 'missing'}): ${proven.size} of ${pairs.length} pairs proven`);
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('markup engine', { skip }, () => {
  it('finds pandoc 2.15 or later (CI fails here instead of skipping)', () => {
    assert.ok(status.available, unavailable);
    assert.ok(status.version && status.binary);
    assert.match(status.detail ?? '', /sandboxed, heap limit 512 MB; all targets/);
  });

  it('offers every source to every other target, except md -> html (the data engine\'s), what LibreOffice does between word processors, and rtf but from md and txt', () => {
    const leftToOthers = new Set(['md->html', 'docx->odt', 'odt->docx', 'docx->txt', 'odt->txt']);
    const expected: string[] = [];
    for (const source of SOURCES) {
      for (const target of TARGETS) {
        if (target === 'rtf' && !RTF_SOURCES.has(source)) continue;
        if (source !== target && !leftToOthers.has(`${source}->${target}`)) expected.push(`${source}->${target}`);
      }
    }
    assert.deepEqual(pairs.map((p) => `${p.source}->${p.target}`).sort(), expected.sort());
    assert.equal(pairs.length, 53);
    for (const pair of pairs) {
      assert.equal(pair.engine, 'markup');
      assert.equal(pair.kind, 'document');
      assert.deepEqual(pair.variants, []);
    }
    const keys = new Set(engine.formats().map((f) => f.key));
    for (const pair of pairs) assert.ok(keys.has(pair.source) && keys.has(pair.target));
    assert.deepEqual(engine.formats().find((f) => f.key === 'latex')?.extensions, ['tex', 'latex', 'ltx']);
  });
});

describe('every markup pair converts, checked by opening the output', { skip, concurrency: 2 }, () => {
  for (const pair of pairs) {
    it(`${pair.source} -> ${pair.target}`, async () => {
      assert.ok(TARGETS.includes(pair.target), `no expectation for target ${pair.target}: add one`);
      const progress: number[] = [];
      const j = job(pair.source, pair.target, fixture(pair.source), {}, { onProgress: (p) => progress.push(p) });
      const result = await engine.convert(j);
      // The fixtures name no other file: nothing is told left out (every epub once said "data").
      assert.deepEqual(result?.warnings ?? [], [], `${pair.source} -> ${pair.target}`);
      const output = j.outputPath;
      const text = await assertMarkupOutput(pair.target, output);
      // A package's runs split text ("Quarterly", " ", "report"): compared without the markup.
      assert.ok(withoutTags(text).includes(DOCUMENT_HEADING), `${pair.target}: holds the heading text`);
      assert.deepEqual(progress, [0, 100]);
      proven.add(`${pair.source}->${pair.target}`);
    });
  }
});

describe('structure survives: headings, emphasis, links, paragraphs', { skip, concurrency: 2 }, () => {
  it('md -> docx, odt, epub, rst, txt: headings as headings', async () => {
    const docx = await assertMarkupOutput('docx', await convert('md', 'docx', fixture('md')));
    assert.match(docx, /<w:pStyle w:val="Heading1" \/>[\s\S]*Quarterly report/);
    assert.match(docx, /<w:pStyle w:val="Heading2" \/>/);
    const odt = await assertMarkupOutput('odt', await convert('md', 'odt', fixture('md')));
    assert.match(odt, /<text:h [^>]*text:outline-level="1"[^>]*>(?:<text:bookmark-start [^>]*\/>)?Quarterly report/);
    const epub = await assertMarkupOutput('epub', await convert('md', 'epub', fixture('md')));
    assert.match(epub, /<h1[^>]*>Quarterly report<\/h1>/);
    const rst = await assertMarkupOutput('rst', await convert('md', 'rst', fixture('md')));
    assert.match(rst, /Quarterly report\n={16}\n/);
    assert.match(rst, /`link <https:\/\/example\.com\/>`__/);
  });

  it('docx, odt, epub, latex, org, rst -> html: a page with the heading as a heading', async () => {
    for (const source of ['docx', 'odt', 'epub', 'latex', 'org']) {
      const html = await assertMarkupOutput('html', await convert(source, 'html', fixture(source)));
      assert.match(html, /<h1[^>]*>(?:<span id="anchor"><\/span>)?Quarterly report<\/h1>/, source);
      assert.match(html, /<em>emphasis<\/em>/, source);
    }
    // reStructuredText makes a lone top-level section the document's title.
    const fromRst = await assertMarkupOutput('html', await convert('rst', 'html', fixture('rst')));
    assert.match(fromRst, /<h1 class="title">Quarterly report<\/h1>/);
  });

  it('docx -> md is GitHub-flavoured: ATX headings, the link kept', async () => {
    const md = await assertMarkupOutput('md', await convert('docx', 'md', fixture('docx')));
    assert.match(md, /^# Quarterly report$/m);
    assert.match(md, /^## Second section$/m);
    assert.match(md, /\[link\]\(https:\/\/example\.com\/\)/);
  });

  it('a web page -> md is Markdown, not HTML: its divisions and spans give their text, links and code keep what Markdown says', async () => {
    const page = `<html><head><title>API</title></head><body><div id="content" class="clearfix"><div class="interior">
      <h2 id="fs-api" class="section">File <span class="kbd">system</span></h2>
      <p>See <a href="fs.html" class="nav-fs" title="The fs module">the fs page</a> and <code class="inline" id="c1">readFile()</code>.</p>
      <pre><code class="language-js lang">const x = 1;</code></pre>
      <p><img src="https://example.com/logo.png" alt="Logo" class="brand" id="logo" width="32"></p>
      </div></div></body></html>`;
    const md = await readFile(await convert('html', 'md', await input('page-to-md.html', page)), 'utf8');
    assert.doesNotMatch(md, /<\/?(?:div|span|a|code)\b/, md);
    assert.match(md, /^## File system$/m);
    assert.match(md, /\[the fs page\]\(fs\.html "The fs module"\)/);
    assert.match(md, /`readFile\(\)`/);
    // pandoc's reader takes the language from "language-js"; the other class goes.
    assert.match(md, /^``` ?js\nconst x = 1;\n```$/m);
    // The size has no Markdown: the image stays HTML, with its size and nothing else.
    assert.match(md, /<img src="https:\/\/example\.com\/logo\.png" width="32" alt="Logo" \/>|!\[Logo\]\(https:\/\/example\.com\/logo\.png\)\{width="32"\}/, md);
  });

  it('a web page -> txt: a layout table gives its cells\' text in reading order, not boxes; a table of plain cells stays one; an image without a description leaves no [] and no empty bullet', async () => {
    const page = `<html><body>
      <table><tr><td><p>Main menu</p><ul><li>Home</li><li>Downloads</li></ul></td>
        <td><table><tr><td><p>Inner first.</p><p>Inner second.</p></td></tr></table></td></tr></table>
      <table><tr><th>City</th><th>People</th></tr><tr><td>Bern</td><td>134,000</td></tr></table>
      <p><img src="logo.png"> <img src="cat.png" alt="A cat"> after the pictures.</p>
      <ul><li><a href="index.html"><img src="home.png"></a></li><li>Next page</li></ul>
      </body></html>`;
    const text = await readFile(await convert('html', 'txt', await input('layout.html', page)), 'utf8');
    const order = ['Main menu', 'Home', 'Downloads', 'Inner first.', 'Inner second.', 'City'].map((words) => text.indexOf(words));
    assert.ok(order.every((at, i) => at >= 0 && (i === 0 || at > order[i - 1]!)), text);
    assert.doesNotMatch(text.slice(0, text.indexOf('City')), /\+-{3}|\|/, 'no boxes drawn round the layout');
    assert.match(text, /City\s+People[\s\S]*Bern\s+134,000/, 'the plain table stays a table');
    assert.doesNotMatch(text, /\[\]/);
    assert.match(text, /\[A cat\] after the pictures\./);
    assert.doesNotMatch(text, /^-\s*$/m, 'no empty bullet where a list item held only an image');
    assert.match(text, /^-\s+Next page$/m);
  });

  it('an image inside a docx reaches epub, and from there odt and docx results (from the document, not from a file)', async () => {
    assert.ok(pandoc);
    const pixel = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');
    await writeFile(join(dir, 'pixel.png'), pixel);
    const markdown = await input('with-image.md', `# Picture\n\n![a pixel](${join(dir, 'pixel.png')})\n\n${DOCUMENT_MARKER}\n`);
    const docx = join(dir, 'with-image.docx');
    const made = await runProcess(pandoc, ['--from=gfm', '--to=docx', `--output=${docx}`, markdown]);
    assert.equal(made.code, 0, made.stderrTail);
    // docx -> odt and back are LibreOffice's: the image goes docx -> epub -> odt and epub -> docx.
    const epub = await convert('docx', 'epub', docx);
    for (const [source, target, from] of [['docx', 'epub', docx], ['epub', 'odt', epub], ['epub', 'docx', epub]] as const) {
      const zip = await openZip(source === 'docx' ? from : await convert(source, target, from));
      const images = zip.entries.filter((entry) => entry.endsWith('.png') && !entry.startsWith('Thumbnails/'));
      assert.equal(images.length, 1, `${source} -> ${target}: ${zip.entries.join(', ')}`);
      assert.ok(Buffer.from(await zip.bytes(), 'latin1').includes(pixel), `${source} -> ${target}: the image's bytes`);
    }
  });

  it('txt: each blank line ends a paragraph, lines stay lines, markup characters stay text', async () => {
    const text = await input('plain.txt', 'Title line\n\n# not a heading *nor emphasis* <b>nor html</b> & co\r\nsecond line\n\n\n    not code\n');
    const md = await readFile(await convert('txt', 'md', text), 'utf8');
    assert.equal(md, 'Title line\n\n\\# not a heading \\*nor emphasis\\* \\<b\\>nor html\\</b\\> & co  \nsecond line\n\nnot code\n');
    const html = (await readFile(await convert('txt', 'html', text), 'utf8')).replace(/\s+/g, ' ');
    assert.match(html, /<p>Title line<\/p> <p># not a heading \*nor emphasis\* &lt;b&gt;nor html&lt;\/b&gt; &amp; co<br \/> second line<\/p> <p>not code<\/p>/);
  });

  it('txt: a line of 80,000 characters without a newline converts whole (it is read in pieces)', async () => {
    const long = await input('long-line.txt', `${'word '.repeat(16_000)}${DOCUMENT_MARKER}`);
    const out = await readFile(await convert('txt', 'md', long, { wrap: 'none' }), 'utf8');
    assert.ok(out.includes(DOCUMENT_MARKER));
    assert.equal(out.trim().split('\n').length, 1);
  });

  it('rst as docutils reads it: "text ::" before a literal block loses the "::", a parsed-literal keeps its lines (pandoc 2.17 left " :" and joined them)', async () => {
    // The form of the AWS CLI's examples (awscli/examples/ec2/describe-availability-zones.rst).
    const rst = await input('example.rst', [
      'The following example uses the default Region. ::', '', '    aws ec2 describe-availability-zones', '',
      'Output::', '', '    {}', '',
      '- An item ::', '', '      nested code', '',
      '.. parsed-literal::', '', '   first line *emphasised*', '   second line', '',
    ].join('\n'));
    const html = (await readFile(await convert('rst', 'html', rst), 'utf8')).replace(/\s+/g, ' ');
    assert.match(html, /<p>The following example uses the default Region\.<\/p> <pre><code>aws ec2/);
    assert.match(html, /<p>Output:<\/p>/);
    assert.match(html, /<li><p>An item<\/p> <pre><code>nested code/);
    assert.match(html, /<div class="parsed-literal"> <p>first line <em>emphasised<\/em><br \/> second line<\/p>/);
    const text = await readFile(await convert('rst', 'txt', rst), 'utf8');
    assert.match(text, /^The following example uses the default Region\.$/m);
    assert.match(text, /^first line emphasised\nsecond line$/m);
  });
});

describe('options, each checked in the output', { skip, concurrency: 2 }, () => {
  it('toc: html, md, rst, txt get a table of contents; docx a TOC field; odt a table-of-content; epub its contents page in the spine', async () => {
    const html = await readFile(await convert('docx', 'html', fixture('docx'), { toc: true }), 'utf8');
    assert.match(html, /<nav id="TOC" role="doc-toc">[\s\S]*<a href="#quarterly-report"[^>]*>Quarterly report<\/a>[\s\S]*<\/nav>/);
    const plainHtml = await readFile(await convert('docx', 'html', fixture('docx')), 'utf8');
    assert.doesNotMatch(plainHtml, /id="TOC"/);

    const md = await readFile(await convert('html', 'md', fixture('html'), { toc: true }), 'utf8');
    assert.match(md, /^- {3}\[Quarterly report\]\(#quarterly-report\)$/m);
    assert.doesNotMatch(await readFile(await convert('html', 'md', fixture('html')), 'utf8'), /\]\(#quarterly-report\)/);
    assert.match(await readFile(await convert('md', 'rst', fixture('md'), { toc: true }), 'utf8'), /^\.\. contents::$/m);
    const txt = await readFile(await convert('md', 'txt', fixture('md'), { toc: true }), 'utf8');
    assert.match(txt, /^- {3}Quarterly report\n {4}- {3}Second section$/m);

    const docx = await openZip(await convert('md', 'docx', fixture('md'), { toc: true }));
    assert.match(await docx.text('word/document.xml'), /TOC \\o &quot;1-3&quot;/);
    const odt = await openZip(await convert('md', 'odt', fixture('md'), { toc: true }));
    assert.match(await odt.text('content.xml'), /<text:table-of-content>/);
    const withToc = await openZip(await convert('md', 'epub', fixture('md'), { toc: true }));
    const without = await openZip(await convert('md', 'epub', fixture('md')));
    const spine = async (zip: Awaited<ReturnType<typeof openZip>>) => (await zip.text('EPUB/content.opf')).match(/<itemref [^>]*>/g) ?? [];
    assert.ok((await spine(withToc)).some((item) => item.includes('idref="nav"')), 'contents page in the spine');
    assert.ok(!(await spine(without)).some((item) => item.includes('idref="nav"')));
  });

  it('number_sections: rtf headings are numbered 1, 1.1 as well (by the engine\'s filter: pandoc\'s RTF writer ignores --number-sections), unnumbered ones not', async () => {
    const source = await input('numbered.md', '# One\n\nA\n\n## Sub\n\nB\n\n# Two\n\nC\n');
    const lines = async (raw: Record<string, unknown>) => (await assertMarkupOutput('rtf', await convert('md', 'rtf', source, raw), 'Two')).split('\n').filter(Boolean);
    assert.deepEqual(await lines({ number_sections: true }), ['1 One', 'A', '1.1 Sub', 'B', '2 Two', 'C']);
    assert.deepEqual(await lines({}), ['One', 'A', 'Sub', 'B', 'Two', 'C']);
    const toc = await lines({ number_sections: true, toc: true });
    assert.ok(toc.findIndex((line) => line.endsWith(' 1.1 Sub')) < toc.indexOf('A'), `the table of contents shows the numbers: ${toc.join('|')}`);
  });

  it('number_sections: html, docx and epub headings are numbered 1, 1.1', async () => {
    const html = (await readFile(await convert('rst', 'html', await input('two.rst', 'One\n===\n\nA\n\nTwo\n===\n\nSub\n---\n\nB\n'), { number_sections: true }), 'utf8')).replace(/\s+/g, ' ');
    assert.match(html, /<span class="header-section-number">1<\/span> One/);
    assert.match(html, /<span class="header-section-number">2\.1<\/span> Sub/);
    const docx = await openZip(await convert('md', 'docx', fixture('md'), { number_sections: 'true' }));
    assert.match(await docx.text('word/document.xml'), /<w:rStyle w:val="SectionNumber" \/><\/w:rPr><w:t xml:space="preserve">1\.1<\/w:t>/);
    const plain = await openZip(await convert('md', 'docx', fixture('md')));
    assert.doesNotMatch(await plain.text('word/document.xml'), /SectionNumber/);
    const epub = (await assertMarkupOutput('epub', await convert('md', 'epub', fixture('md'), { number_sections: true }))).replace(/\s+/g, ' ');
    assert.match(epub, /header-section-number">1<\/span> Quarterly report/);
  });

  const paragraph = `${Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ')}\nsecond source line`;
  for (const target of ['md', 'rst', 'txt'] as const) {
    it(`wrap: ${target} at 72 columns (auto), one line per paragraph (none), the source's lines (preserve)`, async () => {
      const source = await input(`wrap-${target}.tex`, `${paragraph}\n`);
      const lines = async (wrap: string) => (await readFile(await convert('latex', target, source, { wrap }), 'utf8')).trim().split('\n');
      const auto = await lines('auto');
      assert.ok(auto.length >= 4 && auto.every((line) => line.length <= 72), auto.join('|'));
      assert.deepEqual(await lines('none'), [`${paragraph.replace('\n', ' ')}`]);
      assert.deepEqual(await lines('preserve'), paragraph.split('\n'));
    });
  }

  it('the descriptors refuse what a target has no use for, and values that do not exist', () => {
    const refused: [string, string, Record<string, unknown>][] = [
      ['md', 'docx', { wrap: 'none' }], ['md', 'odt', { number_sections: true }], ['html', 'md', { number_sections: true }],
      ['md', 'rst', { wrap: 'sometimes' }], ['md', 'txt', { wrap: '--sandbox' }], ['md', 'epub', { toc: 'maybe' }],
      ['md', 'epub', { template: '/etc/passwd' }], ['md', 'epub', { lua_filter: 'x.lua' }],
    ];
    for (const [source, target, raw] of refused) assert.equal(validateOptions(pairOf(source, target), raw).ok, false, `${source} -> ${target} ${JSON.stringify(raw)}`);
    assert.deepEqual(pairOf('md', 'docx').options.map((o) => o.name), ['toc', 'number_sections']);
    assert.deepEqual(pairOf('docx', 'md').options.map((o) => o.name), ['toc', 'wrap']);
    assert.deepEqual(pairOf('md', 'odt').options.map((o) => o.name), ['toc']);
  });
});

// ------------------------------------------------------------------------- the sandbox

describe('the sandbox: a document reads no file and fetches no URL', { skip }, () => {
  const SECRET = 'SECRET-OTTER-77';
  let server: Server;
  let base: string;
  const requests: string[] = [];
  const documents = new Map<string, string>();
  /** 1x1 PNG, so that an unsandboxed fetch would succeed with a real image. */
  const PIXEL = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000' + '1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082', 'hex');

  before(async () => {
    server = createServer((request, response) => {
      requests.push(request.url ?? '');
      response.writeHead(200, { 'content-type': request.url?.endsWith('.png') ? 'image/png' : 'text/html' });
      response.end(request.url?.endsWith('.png') ? PIXEL : `<p>${SECRET} from the network</p>`);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const secrets = join(dir, 'secrets');
    await mkdir(secrets);
    for (const name of ['secret.png', 'secret.tex', 'secret.rst', 'secret.org', 'secret.html', 'secret.md']) {
      await writeFile(join(secrets, name), name.endsWith('.html') ? `<p>${SECRET} in ${name}</p>` : `${SECRET} in ${name}\n`);
    }
    const file = (name: string) => join(secrets, name);
    documents.set('md', `# Sandbox\n\n![local](${file('secret.png')})\n\n![remote](${base}/md/image.png)\n\n<img src="${base}/md/raw.png">\n`);
    documents.set('html', [
      '<h1>Sandbox</h1>',
      `<img src="${file('secret.png')}">`, `<img src="file://${file('secret.png')}">`, `<img src="${base}/html/image.png">`,
      `<iframe src="${base}/html/frame.html"></iframe>`, `<iframe src="${file('secret.html')}"></iframe>`,
      `<link rel="stylesheet" href="${base}/html/style.css">`,
    ].join('\n'));
    documents.set('latex', [
      '\\section{Sandbox}', `\\input{${file('secret')}}`, `\\include{${file('secret')}}`,
      `\\includegraphics{${file('secret.png')}}`, `\\includegraphics{${base}/latex/image.png}`, '',
    ].join('\n'));
    documents.set('rst', [
      'Sandbox', '=======', '', `.. include:: ${file('secret.rst')}`, '', `.. image:: ${file('secret.png')}`, '',
      `.. image:: ${base}/rst/image.png`, '', '.. raw:: html', `   :file: ${file('secret.html')}`, '',
    ].join('\n'));
    documents.set('org', `* Sandbox\n#+INCLUDE: "${file('secret.org')}"\n[[${file('secret.png')}]]\n[[${base}/org/image.png]]\n`);
  });

  after(async () => {
    await new Promise<void>((resolve) => server?.close(() => resolve()));
  });

  it('without --sandbox these documents do leak (the control: each would read the marker file and fetch)', async () => {
    assert.ok(pandoc);
    for (const [source, text] of documents) {
      const path = await input(`control.${source}`, text);
      const output = join(dir, `control-${source}.docx`);
      const reader = source === 'md' ? 'gfm' : source;
      const result = await runProcess(pandoc, ['--quiet', `--from=${reader}`, '--to=docx', `--output=${output}`, path]);
      assert.equal(result.code, 0, result.stderrTail);
      assert.ok((await (await openZip(output)).bytes()).includes(SECRET), `${source}: unsandboxed pandoc put the marker file into the docx`);
      assert.ok(requests.some((url) => url.startsWith(`/${source}/`)), `${source}: unsandboxed pandoc fetched from the server`);
    }
    requests.length = 0;
  });

  it('what the sandbox left out is told: each include by its name, each image of a docx by its path or address (content_left_out)', async () => {
    const leftOut = async (source: string, target: string) => {
      const j = job(source, target, await input(`left-out-${target}.${source}`, documents.get(source)!));
      const output = await engine.convert(j);
      return (output?.warnings ?? []).map((warning) => {
        assert.equal(warning.code, 'content_left_out');
        assert.ok(warning.message.includes(`"${warning.reference}"`), warning.message);
        return warning.reference;
      });
    };
    const secret = (name: string) => join(dir, 'secrets', name);
    assert.deepEqual(await leftOut('rst', 'docx'), [secret('secret.rst'), secret('secret.png'), `${base}/rst/image.png`]);
    // Org reads a bare absolute path as a link, not an image: nothing of it is left out.
    assert.deepEqual(await leftOut('org', 'docx'), [secret('secret.org'), `${base}/org/image.png`]);
    // Its raw <img> too: raw HTML is read as HTML first.
    assert.deepEqual(await leftOut('md', 'docx'), [secret('secret.png'), `${base}/md/image.png`, `${base}/md/raw.png`]);
    const latex = await leftOut('latex', 'docx');
    assert.ok(latex.some((reference) => reference.startsWith(secret('secret'))), `LaTeX's \\input: ${latex.join(', ')}`);
    // An HTML result keeps an image's address for the browser to load: only the include is missing.
    assert.deepEqual(await leftOut('rst', 'html'), [secret('secret.rst')]);
    assert.deepEqual(requests, [], 'no request reached the server');
  });

  for (const target of ['docx', 'odt', 'epub', 'html', 'md'] as const) {
    it(`the engine -> ${target}: no marker file read, no request made`, async () => {
      for (const [source, text] of documents) {
        // md -> md is no pair, md -> html the data engine's: the md document goes to the others.
        if (!offered(source, target)) continue;
        const output = await convert(source, target, await input(`sandboxed-${target}.${source}`, text));
        const bytes = target === 'md' || target === 'html' ? await readFile(output, 'latin1') : await (await openZip(output)).bytes();
        assert.ok(bytes.includes('Sandbox'), `${source} -> ${target}: converted`);
        assert.ok(!bytes.includes(SECRET), `${source} -> ${target}: the marker file's text is not in the output`);
      }
      assert.deepEqual(requests, [], 'no request reached the server');
    });
  }
});

// ------------------------------------------------------------------------- inert outputs

describe('outputs carry no active content', { skip, concurrency: 2 }, () => {
  const HOSTILE: Record<string, string> = {
    html: [
      '<html><head><title>T</title><script>alert("head")</script></head><body>',
      '<h1 onclick="alert(1)">Heading</h1>', '<div class="c" onmouseover="alert(2)" style="background:url(http://tracker/)">div</div>',
      '<img src="x.png" onerror="alert(3)">', '<a href="javascript:alert(4)">js</a> <a href=" JaVa\tScRiPt:alert(5)">js2</a>',
      '<a href="vbscript:x">vb</a> <a href="data:text/html,<script>alert(6)</script>">data</a>',
      '<script>alert(7)</script><iframe src="https://example.com/"></iframe><object data="x.swf"></object>',
      '<table onclick="alert(8)"><tr onmouseover="alert(9)"><td onclick="alert(10)">cell</td></tr></table>',
      `<p>${DOCUMENT_MARKER} <span onmouseover="alert(11)">span</span> <a href="https://example.com/ok">ok</a></p>`,
      '<img src="data:image/svg+xml;base64,PHN2Zz48L3N2Zz4="> <img src="data:image/png;base64,iVBORw0KGgo="> <img src="/etc/passwd">',
      '</body></html>',
    ].join('\n'),
    rst: [
      'Title', '=====', '', '.. raw:: html', '', '   <script>alert(1)</script>', '',
      `${DOCUMENT_MARKER} \`x <javascript:alert(2)>\`_ and \`ok <https://example.com/ok>\`_`, '',
    ].join('\n'),
    org: [
      '#+TITLE: T @@html:<script>alert(1)</script>@@', '#+HTML_HEAD: <script>alert(2)</script>', '* Heading',
      `${DOCUMENT_MARKER} [[javascript:alert(3)][x]] [[https://example.com/ok][ok]]`, '#+BEGIN_EXPORT html', '<script>alert(4)</script>', '#+END_EXPORT', '',
    ].join('\n'),
    md: [
      '---', 'header-includes: <script>alert(1)</script>', 'css: /etc/passwd', 'cover-image: /etc/passwd', '---', '',
      `# Heading {onclick="alert(2)"}`, '', `${DOCUMENT_MARKER} <script>alert(3)</script> [js](javascript:alert(4)) [ok](https://example.com/ok)`, '',
      '```{=html}', '<script>alert(5)</script>', '```', '',
    ].join('\n'),
  };
  /** Unsafe addresses, as an attribute or a Markdown link or a package relationship would hold them. */
  const UNSAFE_ADDRESS = /^\s*(?:javascript|vbscript|data:text|data:image\/svg|file):/i;
  const decode = (value: string) => value.replace(/&amp;/g, '&').replace(/&quot;/g, '"').replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code)));

  /** What would act when the output is opened; text that only reads "alert(1)" does not. */
  function activeContent(target: string, content: string): string[] {
    const found: string[] = [];
    if (target === 'html' || target === 'epub') {
      for (const tag of content.match(/<[a-z][^>]*>/gi) ?? []) {
        if (/^<(script|iframe|object|embed|frame|applet|base|form)\b/i.test(tag)) found.push(tag);
        if (/\son[a-z]+\s*=/i.test(tag)) found.push(tag);
        if (/\sstyle\s*=\s*"[^"]*url\(/i.test(tag)) found.push(tag);
        for (const [, value] of tag.matchAll(/\s(?:href|src|xlink:href|action|formaction)\s*=\s*"([^"]*)"/gi)) {
          if (UNSAFE_ADDRESS.test(decode(value!))) found.push(tag);
        }
      }
    } else if (target === 'md') {
      found.push(...(content.match(/(?:^|[^\\])<(?:script|iframe|object|embed)\b[^\n]*/gim) ?? []));
      for (const [, address] of content.matchAll(/\]\(([^)\s]*)/g)) if (UNSAFE_ADDRESS.test(address!)) found.push(address!);
    } else if (target === 'docx') {
      for (const [, address] of content.matchAll(/Target="([^"]*)"/g)) {
        if (UNSAFE_ADDRESS.test(decodeURIComponent(decode(address!)))) found.push(address!);
      }
      found.push(...(content.match(/<w:instrText[^>]*>[^<]*(?:INCLUDE|HYPERLINK)[^<]*/g) ?? []));
    }
    return found;
  }

  for (const [source, text] of Object.entries(HOSTILE)) {
    for (const target of ['html', 'epub', 'md', 'docx'] as const) {
      if (!offered(source, target)) continue;
      it(`${source} -> ${target}`, async () => {
        const output = await convert(source, target, await input(`hostile-${source}-${target}.${source}`, text));
        const content = target === 'html' || target === 'md' ? await readFile(output, 'utf8') : await (await openZip(output)).bytes();
        assert.ok(content.includes(DOCUMENT_MARKER), 'converted');
        assert.deepEqual(activeContent(target, content), []);
        assert.ok(content.includes('https://example.com/ok'), 'a safe link stays');
      });
    }
  }

  it('the check finds what pandoc passes on without the engine\'s filter (the control)', async () => {
    assert.ok(pandoc);
    for (const [source, target] of [['html', 'html'], ['rst', 'html'], ['org', 'html'], ['rst', 'md'], ['html', 'md']] as const) {
      const path = await input(`unfiltered-${target}.${source}`, HOSTILE[source]!);
      const output = join(dir, `unfiltered-${source}.${target}`);
      const result = await runProcess(pandoc, ['--quiet', '--sandbox', '--standalone', `--from=${source}`, `--to=${WRITERS[target]}`, `--output=${output}`, path]);
      assert.equal(result.code, 0, result.stderrTail);
      assert.notDeepEqual(activeContent(target, await readFile(output, 'utf8')), [], `${source} -> ${target} unfiltered`);
    }
  });

  it('images: a data: PNG and an image file stay; a data: SVG, a text file and a video keep their alt text only', async () => {
    const html = (await readFile(await convert('rst', 'html', await input('images.rst', [
      'Images', '======', '', '.. image:: data:image/png;base64,iVBORw0KGgo=', '', '.. image:: diagram.svg', '',
      '.. image:: data:image/svg+xml;base64,PHN2Zz48L3N2Zz4=', '   :alt: svg-alt', '', '.. image:: notes.txt', '   :alt: text-alt', '',
      '.. image:: clip.mp4', '   :alt: video-alt', '',
    ].join('\n'))), 'utf8')).replace(/\s+/g, ' ');
    assert.match(html, /<img src="data:image\/png;base64,iVBORw0KGgo="/);
    assert.match(html, /<img src="diagram\.svg"/);
    for (const alt of ['svg-alt', 'text-alt', 'video-alt']) assert.match(html, new RegExp(`<p>${alt}</p>`));
    assert.doesNotMatch(html, /<embed|<video|notes\.txt|clip\.mp4|image\/svg/);
  });
});

// ------------------------------------------------------------------------- failures

describe('documents pandoc cannot read are input_invalid, with its reason and no path of this machine', { skip, concurrency: 2 }, () => {
  const noPaths = (failure: ConversionFailure) => {
    assert.ok(!failure.message.includes(dir), failure.message);
    assert.ok(!failure.message.includes(tmpdir()), failure.message);
  };

  it('malformed LaTeX', async () => {
    const failure = await rejectsWith(engine.convert(job('latex', 'md', await input('bad.tex', '\\begin{itemize}\n\\item x\n\\begin{foo'))), 'input_invalid');
    assert.match(failure.message, /^The LaTeX file could not be read: .*unexpected/);
    assert.match(failure.message, /document\.latex/);
    noPaths(failure);
  });

  it('an rst table that takes its rows from a file of its own: named, and what to do', async () => {
    const failure = await rejectsWith(engine.convert(job('rst', 'html', await input('table.rst', 'Table\n=====\n\n.. csv-table:: Figures\n   :file: figures.csv\n'))), 'input_invalid');
    assert.match(failure.message, /^The reStructuredText file takes part of its content from the file "figures\.csv", which is not read here/);
    noPaths(failure);
  });

  it('a LaTeX macro that expands forever', async () => {
    const failure = await rejectsWith(engine.convert(job('latex', 'txt', await input('loop.tex', '\\newcommand\\a{\\a\\a}\n\\a\n'))), 'input_invalid');
    assert.match(failure.message, /Loop encountered in expanding macro/);
  });

  it('random bytes named .docx, .odt, .epub', async () => {
    const junk = randomBytes(4096);
    for (const source of ['docx', 'odt', 'epub']) {
      const failure = await rejectsWith(engine.convert(job(source, 'md', await input(`junk.${source}`, junk))), 'input_invalid');
      noPaths(failure);
    }
  });

  it('a zip of random bytes renamed .docx (and an epub without its container)', async () => {
    const failure = await rejectsWith(engine.convert(job('docx', 'html', await input('zip.docx', storedZip('word/document.xml', randomBytes(2048))))), 'input_invalid');
    assert.match(failure.message, /docx/i);
    noPaths(failure);
    await rejectsWith(engine.convert(job('epub', 'html', await input('zip.epub', storedZip('content.opf', randomBytes(512))))), 'input_invalid');
  });

  it('text that is not UTF-8 (txt, md, rst, org, LaTeX) is read as Windows-1252; with NUL bytes it is no text', async () => {
    const output = await convert('txt', 'md', await input('latin1.txt', Buffer.from([...Buffer.from('caf'), 0xe9, 0x0a, 0x93, ...Buffer.from('zwei'), 0x94, 0x0a])));
    assert.match(await readFile(output, 'utf8'), /café\s+“zwei”/);
    // Markdown, rst, Org and LaTeX, which pandoc reads itself (UTF-8 only), the same.
    for (const [source, text] of [['md', '# Men\xfc\n\nCaf\xe9 \x93zwei\x94\n'], ['rst', 'Men\xfc\n====\n\nCaf\xe9 \x93zwei\x94\n'], ['org', '* Men\xfc\nCaf\xe9 \x93zwei\x94\n'], ['latex', '\\section{Men\xfc}\nCaf\xe9 \x93zwei\x94\n']] as const) {
      const plain = await readFile(await convert(source, 'txt', await input(`latin1.${source}`, Buffer.from(text, 'latin1'))), 'utf8');
      assert.match(plain, /Menü/, source);
      assert.match(plain, /Café “zwei”/, source);
    }
    const failure = await rejectsWith(engine.convert(job('txt', 'md', await input('utf16.txt', Buffer.from('\ufeffcafé\n', 'utf16le')))), 'input_invalid');
    assert.match(failure.message, /is not text: it is not UTF-8 and has NUL bytes \(binary data, or UTF-16 text/);
  });

  it('reads a pandoc message that says which data file a sandboxed writer missed', () => {
    assert.equal(missingDataFile('Could not find data file data/data/docx/[Content_Types].xml'), 'docx/[Content_Types].xml');
    assert.equal(missingDataFile('Could not find data file data/data/epub.css\n'), 'epub.css');
    assert.equal(missingDataFile('unexpected Tok'), undefined);
  });
});

// ------------------------------------------------------------------------- limits and processes

describe('cancel, time limit, heap limit and output cap leave no process behind', { skip }, () => {
  it('cancel kills pandoc and its process group; the job rejects with the reason; pandoc ran with the sandbox and the heap limit', async () => {
    const controller = new AbortController();
    const conversion = engine.convert(job('md', 'epub', await input('nested-cancel.md', NESTED_QUOTES), {}, { signal: controller.signal }));
    conversion.catch(() => undefined);
    let groups: number[] = [];
    const deadline = Date.now() + 5000;
    while ((groups = liveChildPids()).length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(groups.length, 1, 'one pandoc is running');
    // setpriv and nice exec pandoc: the leader's command line is pandoc's own by now (or soon).
    let argv: string[] = [];
    while (Date.now() < deadline && !(argv = readFileSync(`/proc/${groups[0]}/cmdline`, 'utf8').split('\0'))[0]?.endsWith('pandoc')) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.ok(argv[0]?.endsWith('pandoc'), argv.join(' '));
    for (const arg of ['+RTS', '-M512m', '-RTS', '--sandbox', '--from=gfm', '--to=epub3', '--lua-filter=inert.lua', '--epub-embed-font=data', 'document.md']) assert.ok(argv.includes(arg), `${arg} in ${argv.join(' ')}`);
    assert.ok(!argv.some((arg) => arg.includes(dir)), 'no path of the job on the command line');
    const reason = new Error('cancelled');
    controller.abort(reason);
    await assert.rejects(conversion, (error) => error === reason);
    assert.deepEqual(leftoversOfGroup(groups[0]!), []);
    assertNoPandoc();
    await assertNoWorkDirs();
  });

  it('a Markdown list nested past 400 columns is refused by line before pandoc reads it (quadratic there); sixty levels convert', async () => {
    const list = (levels: number) => `${Array.from({ length: levels }, (_, i) => `${'  '.repeat(i)}- level ${i + 1}`).join('\n')}\n`;
    const failure = await rejectsWith(engine.convert(job('md', 'docx', await input('deep-list.md', list(1500)))), 'input_invalid');
    assert.equal(failure.message, 'Line 202 is a list item indented 402 columns: Markdown lists are converted up to 400 columns deep (a hundred levels or more), since deeper ones take the reader minutes.');
    assertNoPandoc();
    const text = await readFile(await convert('md', 'txt', await input('sixty.md', list(60))), 'utf8');
    assert.match(text, /level\s+60\b/);
  });

  it('deeply nested quotes hit the engine time limit: timeout, no process left', async () => {
    const limited = createMarkupEngine({ timeLimitMs: 1000 });
    await limited.probe();
    const began = Date.now();
    await rejectsWith(limited.convert(job('md', 'epub', await input('nested-limit.md', NESTED_QUOTES))), 'timeout');
    assert.ok(Date.now() - began < 5000, `${Date.now() - began} ms`);
    assertNoPandoc();
    await assertNoWorkDirs();
  });

  it('a time limit from the runner (an abort with a timeout reason) ends the same way', async () => {
    const reason = new ConversionFailure('timeout', 'The conversion took longer than its limit.');
    const controller = new AbortController();
    setTimeout(() => controller.abort(reason), 800);
    const nested = await input('nested-runner.rst', `${Array.from({ length: 3000 }, (_, i) => `${'  '.repeat(i)}- item`).join('\n')}\n`);
    await assert.rejects(engine.convert(job('rst', 'odt', nested, {}, { signal: controller.signal })), (error) => error === reason);
    assertNoPandoc();
  });

  it('a table too large for the heap limit fails with memory_limit (the default 512 MB passes the same table)', async () => {
    const rows = Array.from({ length: 5000 }, (_, i) => `| ${DOCUMENT_MARKER} ${i} | *cell* |`).join('\n');
    const table = await input('table.md', `| a | b |\n|---|---|\n${rows}\n`);
    const small = createMarkupEngine({ memoryLimitMb: 32 });
    await small.probe();
    const failure = await rejectsWith(small.convert(job('md', 'docx', table)), 'memory_limit');
    assert.equal(failure.message, 'The conversion needed more memory than its limit of 32 MB.');
    assertNoPandoc();
    await assertMarkupOutput('docx', await convert('md', 'docx', table));
  });

  it('with the default 512 MB: 20,000 nested quotes to rst exhaust the heap, memory_limit', async () => {
    const failure = await rejectsWith(engine.convert(job('md', 'rst', await input('nested-heap.md', NESTED_QUOTES))), 'memory_limit');
    assert.equal(failure.message, 'The conversion needed more memory than its limit of 512 MB.');
    assertNoPandoc();
  });

  it('a result over maxOutputBytes fails with the output cap and leaves nothing', async () => {
    const j = job('md', 'docx', fixture('md'), {}, { maxOutputBytes: 1000 });
    let caught: unknown;
    await engine.convert(j).catch((error: unknown) => (caught = error));
    assert.ok(isOutputCapFailure(caught), String(caught));
    await assert.rejects(readFile(j.outputPath), { code: 'ENOENT' });
    await assertNoWorkDirs();
    await engine.convert(job('md', 'docx', fixture('md'), {}, { maxOutputBytes: 100_000 }));
  });
});

describe('finding pandoc', { skip }, () => {
  it('without pandoc the engine is unavailable, offers nothing, and says how to install it', async () => {
    const missing = createMarkupEngine({ env: { PATH: join(dir, 'nowhere') } });
    const found = await missing.probe();
    assert.equal(found.available, false);
    assert.match(found.detail ?? '', /pandoc not found \(install Debian's pandoc \(apt-get install pandoc\), or set CONVD_PANDOC_PATH\)/);
    assert.deepEqual(missing.pairs(), []);
    await assert.rejects(missing.convert(job('md', 'docx', fixture('md'))), (error) => error instanceof ConversionFailure && error.code === 'internal_error');
  });

  it('a pandoc older than 2.15 is refused: it has no --sandbox', async () => {
    const old = join(dir, 'old-pandoc');
    await writeFile(old, '#!/bin/sh\necho "pandoc 2.9.2.1"\necho "Compiled with pandoc-types 1.20"\n');
    await chmod(old, 0o755);
    const engineWithOld = createMarkupEngine({ env: { CONVD_PANDOC_PATH: old, PATH: '' } });
    const found = await engineWithOld.probe();
    assert.equal(found.available, false);
    assert.equal(found.version, '2.9.2.1');
    assert.match(found.detail ?? '', /pandoc 2\.9\.2\.1 has no --sandbox \(2\.15 and later have it\)/);
    assert.deepEqual(engineWithOld.pairs(), []);
  });

  it('CONVD_PANDOC_PATH is used as given', async () => {
    assert.ok(pandoc);
    const configured = createMarkupEngine({ env: { CONVD_PANDOC_PATH: pandoc, PATH: '' } });
    const found = await configured.probe();
    assert.ok(found.available, found.detail);
    assert.equal(found.binary, `${pandoc} (env)`);
    const broken = await createMarkupEngine({ env: { CONVD_PANDOC_PATH: join(dir, 'no-such-pandoc') } }).probe();
    assert.equal(broken.available, false);
    assert.match(broken.detail ?? '', /pandoc does not run/);
  });
});
