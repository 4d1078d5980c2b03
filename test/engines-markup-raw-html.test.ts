/**
 * Markdown's raw HTML: a `<pre>`, a `<div>`, a `<table>`, a `<details>`, inline
 * `<b>` and `<br>` kept their text in the data engine's HTML and the PDF printed from it, but
 * vanished from every target pandoc writes (docx, odt, epub, rst, txt, and rtf (pandoc's own writer)):
 * the markup engine's filter dropped raw blocks. Now one Markdown file gives the same words in
 * every target md has, each result read back independently (docs/formats.md, "pandoc"); what HTML
 * runs rather than says (a script, a style) is in none of them, not even as text; and reading the
 * HTML fetches nothing and reads no file (the HTML reader runs inside a filter, outside pandoc's
 * sandbox), against a control that shows the naive filter does fetch.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { defaultEngines } from '../src/engines/catalog.ts';
import { runProcess } from '../src/engines/subprocess.ts';
import type { EngineJob } from '../src/engines/types.ts';
import { validateOptions } from '../src/formats/options.ts';
import { FormatRegistry } from '../src/formats/registry.ts';
import { defaultServiceConfig } from '../src/service/config.ts';
import { documentText } from './helpers/document-text.ts';
import { openZip, pandocPath } from './helpers/markup.ts';

const config = defaultServiceConfig();
// The engines md's targets go through: pandoc, the data engine's page, Chromium, LibreOffice.
const registry = await FormatRegistry.create(
  defaultEngines({ maxInputPixels: config.maxInputPixels, engines: { office: { ...config.engines.office, instances: 1 } } })
    .filter((engine) => ['data', 'html', 'office', 'markup'].includes(engine.name)),
  config.creditWeights,
);
const pandoc = await pandocPath();
const required = process.env.CI === 'true';
const markupReady = registry.statuses.find((status) => status.name === 'markup')?.available === true;
const skip = markupReady || required ? false : 'pandoc is not usable here';

/** Every target of md this suite reads back, and the engines that make it. */
const TARGETS = ['txt', 'rst', 'docx', 'odt', 'epub', 'rtf', 'html', 'pdf'] as const;

/** Words of each block, each of which must reach every target. */
const KEPT = [
  'OPENALPHA', 'PREBRAVO', 'PRECHARLIE', 'DIVDELTA', 'HEADECHO', 'HEADFOXTROT', 'CELLGOLF', 'CELLHOTEL',
  'BOLDINDIA', 'AFTERJULIET', 'SUMMARYKILO', 'INSIDELIMA', 'CLOSEQUEBEC',
];
/** A script's and a style's text: in no target, not even as words. */
const CODE = ['SCRIPTMIKE', 'SCRIPTNOVEMBER', 'STYLEOSCAR', 'STYLEPAPA'];

const RAW_MARKDOWN = [
  '# Raw HTML',
  '',
  'The opening paragraph OPENALPHA.',
  '',
  '<pre>',
  'PREBRAVO on the first line',
  '    PRECHARLIE indented on the second',
  '</pre>',
  '',
  '<div class="note">',
  '<p>A paragraph DIVDELTA in a div.</p>',
  '</div>',
  '',
  '<table>',
  '<tr><th>HEADECHO</th><th>HEADFOXTROT</th></tr>',
  '<tr><td>CELLGOLF</td><td>CELLHOTEL</td></tr>',
  '</table>',
  '',
  'Inline <b>BOLDINDIA</b> then a line break<br>AFTERJULIET on the next line.',
  '',
  '<details>',
  '<summary>SUMMARYKILO</summary>',
  '',
  'Markdown inside, *INSIDELIMA* emphasised.',
  '',
  '</details>',
  '',
  '<script>',
  'var stolen = "SCRIPTMIKE"; if (a<b) { document.write(stolen); }',
  '</script>',
  '',
  'Inline code <script>alert("SCRIPTNOVEMBER")</script> and <style>p { color: STYLEOSCAR }</style> stay out.',
  '',
  '<style>',
  'body { background: STYLEPAPA; }',
  '</style>',
  '',
  'The closing paragraph CLOSEQUEBEC.',
  '',
].join('\n');

let dir: string;
let counter = 0;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'convd-rawhtml-'));
});

after(async () => {
  await registry.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function input(name: string, content: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, content);
  return path;
}

/** Converts as the service does (the registry's pair: one engine or a chain), with default options. */
async function convert(source: string, target: string, inputPath: string): Promise<string> {
  const pair = registry.pair(source, target);
  assert.ok(pair, `${source} -> ${target} is offered`);
  const checked = validateOptions(pair, {});
  assert.ok(checked.ok);
  const job: EngineJob = {
    inputPath, outputPath: join(dir, `out-${++counter}.${target}`), source, target, variant: pair.variants[0]?.key ?? null,
    options: checked.options, signal: new AbortController().signal, onProgress: () => undefined,
  };
  await registry.engine(pair.engine)!.convert(job);
  return job.outputPath;
}

/** Where a target needs an engine this machine lacks (Chromium, LibreOffice): a failure under CI, else a skip. */
function unavailable(source: string, target: string): string | false {
  if (registry.pair(source, target)) return false;
  if (required) return false;
  return `${source} -> ${target} is not offered here (${registry.statuses.filter((s) => !s.available).map((s) => s.name).join(', ') || 'no engine missing'})`;
}

function inOrder(text: string, words: readonly string[]): void {
  let from = 0;
  for (const word of words) {
    const at = text.indexOf(word, from);
    assert.ok(at >= 0, `"${word}" comes after "${text.slice(Math.max(0, from - 40), from)}" in:\n${text}`);
    from = at + word.length;
  }
}

describe('one Markdown file, the same words in every target: its raw HTML is read, not dropped', { skip, concurrency: 2 }, () => {
  for (const target of TARGETS) {
    it(`md -> ${target} (${registry.pair('md', target)?.steps?.map((step) => step.engine).join(' + ') ?? registry.pair('md', target)?.engine ?? 'not offered'})`, { skip: unavailable('md', target) }, async () => {
      const output = await convert('md', target, await input(`raw-${target}.md`, RAW_MARKDOWN));
      const text = await documentText(target, output);
      // Every block's words, in the document's order (PDFium reads a table cell by cell too).
      inOrder(text, KEPT);
      for (const word of CODE) assert.ok(!text.includes(word), `${target}: a script's or a style's text (${word}) is not in the result`);
      if (target === 'html' || target === 'epub') {
        const markup = target === 'html' ? await readFile(output, 'utf8') : await (await openZip(output)).bytes();
        assert.doesNotMatch(markup, /<script|<iframe|\son[a-z]+=/i, `${target}: no active content`);
      }
      // The data engine's page opens a <details>: printed (md -> pdf), it shows what it holds.
      if (target === 'html') assert.match(await readFile(output, 'utf8'), /<details open/);
    });
  }
});

describe('what the HTML says becomes the document\'s own elements', { skip, concurrency: 2 }, () => {
  it('docx: a table, bold, a line break, the pre block as code (pandoc\'s Source Code style)', async () => {
    const xml = await (await openZip(await convert('md', 'docx', await input('structure.md', RAW_MARKDOWN)))).text('word/document.xml');
    assert.match(xml, /<w:tbl>[\s\S]*HEADECHO[\s\S]*CELLHOTEL[\s\S]*<\/w:tbl>/, 'the raw table is a Word table');
    assert.match(xml, /<w:rPr>(?:<w:bCs \/>)?<w:b \/><\/w:rPr><w:t xml:space="preserve">BOLDINDIA<\/w:t>/, 'BOLDINDIA is bold');
    assert.match(xml, /line break<\/w:t><\/w:r><w:r><w:br \/><\/w:r><w:r><w:t xml:space="preserve">AFTERJULIET/, '<br> is a line break');
    assert.match(xml, /<w:pStyle w:val="SourceCode" \/><\/w:pPr>(?:(?!<\/w:p>)[\s\S])*PREBRAVO(?:(?!<\/w:p>)[\s\S])*<w:br \/>(?:(?!<\/w:p>)[\s\S])*PRECHARLIE/, '<pre> is one code block, its lines kept');
    assert.match(xml, /<w:rPr>(?:<w:iCs \/>)?<w:i \/><\/w:rPr><w:t xml:space="preserve">INSIDELIMA/, 'Markdown inside <details> keeps its emphasis');
  });

  it('txt: the pre block keeps its lines and indentation; the table its cells; <br> a new line', async () => {
    const text = await readFile(await convert('md', 'txt', await input('structure-txt.md', RAW_MARKDOWN)), 'utf8');
    assert.match(text, /PREBRAVO on the first line\n\s*    PRECHARLIE indented on the second/);
    assert.match(text, /HEADECHO\s+HEADFOXTROT[\s\S]*CELLGOLF\s+CELLHOTEL/);
    assert.match(text, /a line break\nAFTERJULIET/);
  });

  it('odt: a table', async () => {
    const xml = await (await openZip(await convert('md', 'odt', await input('structure.md', RAW_MARKDOWN)))).text('content.xml');
    assert.match(xml, /<table:table [\s\S]*CELLGOLF[\s\S]*<\/table:table>/);
  });

  it('Markdown between an element\'s tags keeps its place and its own markup (a heading, a list)', async () => {
    const md = ['Before BEFOREWORD.', '', '<div class="box">', '', '## Inner heading INNERHEAD', '', '* item ITEMONE', '* item ITEMTWO', '', '</div>', '', 'After AFTERWORD.', ''].join('\n');
    const xml = await (await openZip(await convert('md', 'docx', await input('inside.md', md)))).text('word/document.xml');
    inOrder(xml, ['BEFOREWORD', 'INNERHEAD', 'ITEMONE', 'ITEMTWO', 'AFTERWORD']);
    assert.match(xml, /<w:pStyle w:val="Heading2" \/>[\s\S]{0,400}INNERHEAD/, 'the heading is a heading');
    assert.match(xml, /<w:numPr>[\s\S]{0,400}ITEMONE/, 'the list is a list');
  });

  it('an element never closed keeps the rest of the document; a stray closing tag loses nothing', async () => {
    const md = ['</span>', '', 'First FIRSTWORD.', '', '<div>', '', 'Second SECONDWORD with *EMWORD*.', '', '* LISTWORD', '', 'Third <i>THIRDWORD', ''].join('\n');
    const text = await readFile(await convert('md', 'txt', await input('unclosed.md', md)), 'utf8');
    inOrder(text, ['FIRSTWORD', 'SECONDWORD', 'EMWORD', 'LISTWORD', 'THIRDWORD']);
  });

  it('rst\'s raw:: html and org\'s HTML export blocks are read as HTML too (they were dropped)', async () => {
    const rst = ['Title', '=====', '', '.. raw:: html', '', '   <table><tr><td>RSTCELL</td></tr></table>', '   <p>RSTPARA <b>RSTBOLD</b></p>', '', 'After RSTAFTER.', ''].join('\n');
    const fromRst = await documentText('docx', await convert('rst', 'docx', await input('raw.rst', rst)));
    inOrder(fromRst, ['RSTCELL', 'RSTPARA', 'RSTBOLD', 'RSTAFTER']);
    const org = ['* Title', '#+BEGIN_EXPORT html', '<p>ORGPARA</p><script>ORGSCRIPT()</script>', '#+END_EXPORT', 'Text @@html:<b>ORGINLINE</b>@@ after.', ''].join('\n');
    const fromOrg = await readFile(await convert('org', 'txt', await input('raw.org', org)), 'utf8');
    inOrder(fromOrg, ['ORGPARA', 'ORGINLINE']);
    assert.ok(!fromOrg.includes('ORGSCRIPT'));
  });

  it('a Markdown file without raw HTML converts as before (the filter does not run: nothing to read)', async () => {
    const md = '# Plain\n\nJust *text*, a [link](https://example.com/) and 3 < 4 > 2.\n';
    const text = await readFile(await convert('md', 'txt', await input('plain.md', md)), 'utf8');
    assert.match(text, /Just text, a link and 3 < 4 > 2\./);
  });
});

describe('reading the HTML fetches nothing and reads no file', { skip }, () => {
  const SECRET = 'SECRET-HERON-31';
  let server: Server;
  let base: string;
  const requests: string[] = [];
  let secretHtml: string;

  before(async () => {
    server = createServer((request, response) => {
      requests.push(request.url ?? '');
      response.writeHead(200, { 'content-type': 'text/html' });
      response.end(`<p>${SECRET} from the network</p>`);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    await mkdir(join(dir, 'secrets'), { recursive: true });
    secretHtml = join(dir, 'secrets', 'secret.html');
    await writeFile(secretHtml, `<p>${SECRET} in a file</p>`);
  });

  after(async () => {
    await new Promise<void>((resolve) => server?.close(() => resolve()));
  });

  const hostile = () => [
    '# Fetches',
    '',
    `<iframe src="${base}/iframe.html">frame fallback</iframe>`,
    '',
    `<div><iframe src="${base}/block-iframe.html"></iframe></div>`,
    '',
    `<iframe src="${secretHtml}"></iframe> <IFRAME SRC="file://${secretHtml}"></IFRAME>`,
    '',
    `<object data="${base}/object.html"></object> <embed src="${base}/embed.html"> <frame src="${base}/frame.html">`,
    '',
    `<link rel="stylesheet" href="${base}/style.css"> <script src="${base}/script.js"></script>`,
    '',
    `<video src="${base}/video.mp4"><source src="${base}/source.mp4"><track src="${base}/track.vtt"></video> <audio src="${base}/audio.mp3"></audio>`,
    '',
    `<img src="${base}/image.png" onerror="alert(1)" alt="ALTWORD"> <input type="image" src="${base}/input.png">`,
    '',
    `<form action="${base}/form"><button formaction="${base}/button">BUTTONWORD</button></form>`,
    '',
    'End ENDWORD.',
    '',
  ].join('\n');

  it('the control: a filter that reads raw HTML with pandoc\'s plain HTML reader fetches the iframe (outside the sandbox)', async () => {
    assert.ok(pandoc);
    const filter = await input('naive.lua', "function RawBlock(el) if el.format == 'html' then return pandoc.read(el.text, 'html').blocks end end\n");
    // What a browser would show of the block: the page the iframe points at, read in.
    const path = await input('control.md', hostile());
    const result = await runProcess(pandoc, ['--quiet', '--sandbox', '--from=gfm', '--to=plain', `--lua-filter=${filter}`, `--output=${join(dir, 'control.txt')}`, path]);
    assert.equal(result.code, 0, result.stderrTail);
    assert.ok(requests.includes('/block-iframe.html'), `the naive filter fetched the iframe (requests: ${requests.join(', ')})`);
    assert.ok((await readFile(join(dir, 'control.txt'), 'utf8')).includes(SECRET), 'and put the page into the document');
    requests.length = 0;
  });

  for (const target of ['txt', 'docx', 'odt', 'epub', 'rst'] as const) {
    it(`md -> ${target}: no request, no file's text, the document's own words kept`, async () => {
      const output = await convert('md', target, await input(`fetches-${target}.md`, hostile()));
      const text = await documentText(target, output);
      assert.ok(text.includes('ENDWORD'), 'converted');
      assert.ok(!text.includes(SECRET), 'no page or file was read into the result');
      assert.deepEqual(requests, [], 'no request reached the server');
    });
  }
});
