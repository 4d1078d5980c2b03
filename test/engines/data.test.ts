import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse as parseCsv } from 'csv-parse/sync';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { ConversionFailure } from '../../src/errors/api-error.ts';
import { createDataEngine } from '../../src/engines/data/data-engine.ts';
import type { EngineJob } from '../../src/engines/types.ts';
import { validateOptions } from '../../src/formats/options.ts';
import type { ConversionPair } from '../../src/engines/pairs.ts';
import type { ConversionOptions } from '../../src/model/conversion.ts';
import { decodeData } from '../helpers/registry-pairs-fixtures.ts';

const engine = createDataEngine();
const status = await engine.probe();
const pairs = engine.pairs();

/** The records every tabular fixture holds: quotes, delimiters, newlines and non-Latin text included. */
const ROWS = [
  { id: '1', name: 'Zoë, "the" café', note: 'line one\nline two', city: 'Zürich' },
  { id: '2', name: 'Ωmega', note: '', city: 'Москва' },
  { id: '3', name: 'plain', note: 'semi;colon | pipe', city: '東京' },
];
const COLUMNS = Object.keys(ROWS[0]!);

/** RFC 4180 written by hand, so the fixtures do not come from the library under test. */
function delimited(delimiter: string, rows: Record<string, string>[] = ROWS): string {
  const quote = (value: string) => (/[",\n\t;|]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value);
  return [COLUMNS, ...rows.map((row) => COLUMNS.map((c) => row[c]!))].map((values) => values.map(quote).join(delimiter)).join('\r\n') + '\r\n';
}

/** TSV has no quoting: its fixture is written literally (quotes kept), so it holds no line break. */
const TSV_ROWS = ROWS.map((row) => ({ ...row, note: row.note.replace(/\n/g, ' ') }));
const literalTsv = (rows: Record<string, string>[]) => [COLUMNS, ...rows.map((row) => COLUMNS.map((c) => row[c]!))].map((values) => values.join('\t')).join('\n') + '\n';

const MARKDOWN = [
  '# Report & "Summary" <3',
  '',
  'Some *emphasis*, a [link](https://example.com) and [bad](javascript:alert(1)).',
  '',
  '| a | b |',
  '|---|---|',
  '| 1 | 2 |',
  '',
  '<script>alert("x")</script>',
  '<img src="x.png" onerror="alert(1)">',
  '',
  '- [x] done',
  '',
].join('\n');

const FIXTURES: Record<string, string> = {
  csv: delimited(','),
  tsv: literalTsv(TSV_ROWS),
  json: JSON.stringify(ROWS, null, 2),
  ndjson: ROWS.map((row) => JSON.stringify(row)).join('\n') + '\n',
  yaml: stringifyYaml(ROWS),
  md: MARKDOWN,
};

let dir: string;
let counter = 0;
const proven = new Set<string>();

async function input(name: string, content: string | Buffer): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, content);
  return path;
}

function defaults(pair: ConversionPair | undefined): ConversionOptions {
  const options: ConversionOptions = {};
  for (const d of pair?.options ?? []) if (d.default !== null) options[d.name] = d.default;
  return options;
}

/** Runs a conversion with the pair's defaults plus `options`; returns the output text. */
async function convert(source: string, target: string, inputPath: string, options: ConversionOptions = {}, extra: Partial<EngineJob> = {}): Promise<string> {
  const pair = pairs.find((p) => p.source === source && p.target === target);
  const outputPath = join(dir, `out-${++counter}.${target}`);
  await engine.convert({
    inputPath, outputPath, source, target, variant: null, options: { ...defaults(pair), ...options },
    signal: new AbortController().signal, onProgress: () => undefined, ...extra,
  });
  return readFile(outputPath, 'utf8');
}

async function fails(promise: Promise<unknown>, code: string, pattern: RegExp): Promise<void> {
  let caught: unknown;
  await promise.catch((error: unknown) => (caught = error));
  assert.ok(caught instanceof ConversionFailure, `expected ConversionFailure, got ${String(caught)}`);
  assert.equal(caught.code, code, caught.message);
  assert.match(caught.message, pattern);
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'convd-data-'));
});

after(async () => {
  console.log(`data engine: ${proven.size} of ${pairs.length} pairs proven`);
  await rm(dir, { recursive: true, force: true });
});

describe('data engine', () => {
  it('is available and offers csv/tsv/json/ndjson/yaml between each other and to html, and md -> html', () => {
    assert.ok(status.available);
    for (const source of ['csv', 'tsv', 'json', 'ndjson', 'yaml']) {
      for (const target of ['csv', 'tsv', 'json', 'ndjson', 'yaml']) {
        if (source !== target) assert.ok(pairs.some((p) => p.source === source && p.target === target), `${source} -> ${target}`);
      }
    }
    assert.ok(pairs.some((p) => p.source === 'md' && p.target === 'html'));
    for (const source of ['csv', 'tsv', 'json', 'ndjson', 'yaml']) assert.ok(pairs.some((p) => p.source === source && p.target === 'html'), `${source} -> html`);
    const keys = new Set(engine.formats().map((f) => f.key));
    for (const pair of pairs) {
      assert.equal(pair.kind, 'data');
      assert.ok(keys.has(pair.source) && keys.has(pair.target));
      assert.equal(new Set(pair.options.map((o) => o.name)).size, pair.options.length, 'option names are unique');
    }
  });
});

describe('every data pair converts, checked with a parser of the target format', () => {
  for (const pair of pairs) {
    it(`${pair.source} -> ${pair.target}`, async () => {
      const fixture = FIXTURES[pair.source];
      assert.ok(fixture !== undefined, `no fixture for ${pair.source}: add one`);
      const text = await convert(pair.source, pair.target, await input(`in-${pair.source}-${pair.target}.${pair.source}`, fixture));
      if (pair.target === 'html' && pair.source !== 'md') {
        // A table: the column names, then each record's values, each in a cell of its own.
        assert.match(text, /^<!doctype html>/i);
        const expected = pair.source === 'tsv' ? TSV_ROWS : ROWS;
        assert.deepEqual(cellsOf(text, 'th'), COLUMNS);
        assert.deepEqual(cellsOf(text, 'td'), expected.flatMap((row) => COLUMNS.map((c) => row[c as keyof typeof row])));
      } else if (pair.target === 'html') {
        assert.match(text, /^<!doctype html>/i);
        assert.match(text, /<title>Report &amp; &quot;Summary&quot; &lt;3<\/title>/);
        assert.match(text, /<h1[^>]*>Report &amp; (&quot;|")Summary(&quot;|") &lt;3<\/h1>/);
        assert.match(text, /<table>[\s\S]*<td>1<\/td>[\s\S]*<\/table>/);
        assert.match(text, /<a href="https:\/\/example.com" rel="noopener noreferrer nofollow">link<\/a>/);
        assert.match(text, /<img src="x.png" \/>/);
        assert.doesNotMatch(text, /<script|onerror=|(href|src)\s*=\s*"?javascript:/i);
      } else {
        assert.deepEqual(decodeData(pair.target, text), pair.source === 'tsv' ? TSV_ROWS : ROWS);
      }
      proven.add(`${pair.source}->${pair.target}`);
    });
  }
});

/** The text of every `tag` cell of a page, in order, unescaped. */
function cellsOf(html: string, tag: 'th' | 'td'): string[] {
  const entities: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" };
  return [...html.matchAll(new RegExp(`<${tag}(?:\\s[^>]*)?>([\\s\\S]*?)</${tag}>`, 'g'))]
    .map((match) => match[1]!.replace(/<wbr>/g, '').replace(/&(amp|lt|gt|quot|#39);/g, (_, name: string) => entities[name]!));
}

describe('data as a page (-> html, the step to pdf)', () => {
  const HOSTILE = '<script>alert(1)</script><img src=x onerror="alert(2)">\'"&';

  it('the user\'s text is escaped: no tag of it reaches the page, in a table or in a document', async () => {
    const table = await convert('json', 'html', await input('hostile-table.json', JSON.stringify([{ [HOSTILE]: HOSTILE, nested: { [HOSTILE]: [HOSTILE] } }])));
    const document = await convert('yaml', 'html', await input('hostile.yaml', stringifyYaml({ [HOSTILE]: HOSTILE })));
    for (const page of [table, document]) {
      assert.doesNotMatch(page, /<script|<img|onerror="/i);
      assert.ok(page.replace(/<wbr>/g, '').includes('&lt;script&gt;alert(1)&lt;/script&gt;'), 'shown as text');
    }
    assert.deepEqual(cellsOf(table, 'th'), [HOSTILE, 'nested']);
    assert.equal(cellsOf(table, 'td')[0], HOSTILE);
  });

  it('a wide table is cut into bands of whole columns, each numbering its rows; a document is printed whole', async () => {
    const columns = Array.from({ length: 30 }, (_, index) => `column number ${index}`);
    const rows = [1, 2].map((n) => Object.fromEntries(columns.map((column) => [column, `value ${n} of ${column}`])));
    const page = await convert('json', 'html', await input('wide.json', JSON.stringify(rows)));
    const tables = page.match(/<table>[\s\S]*?<\/table>/g) ?? [];
    assert.ok(tables.length > 1, `${tables.length} bands`);
    assert.deepEqual(tables.flatMap((table) => cellsOf(table, 'th').slice(1)), columns, 'every column once, in order');
    for (const table of tables) assert.deepEqual(cellsOf(table, 'th')[0], '#');
    const document = { title: 'not a table', items: [1, { deep: ['x'] }] };
    const whole = await convert('json', 'html', await input('doc.json', JSON.stringify(document)));
    assert.deepEqual(JSON.parse(/<pre>([\s\S]*)<\/pre>/.exec(whole)![1]!.replace(/&quot;/g, '"')), document);
  });
});

describe('data options', () => {
  it('csv: the delimiter is detected, or taken from the option', async () => {
    const semicolons = await input('semi.csv', delimited(';'));
    assert.deepEqual(decodeData('json', await convert('csv', 'json', semicolons)), ROWS);
    assert.deepEqual(decodeData('json', await convert('csv', 'json', semicolons, { delimiter: 'semicolon' })), ROWS);
    // Forced to the wrong delimiter, the file is one column per line.
    const wrong = decodeData('json', await convert('csv', 'json', await input('two.csv', 'a;b\n1;2\n'), { delimiter: 'comma' }));
    assert.deepEqual(wrong, [{ 'a;b': '1;2' }]);
  });

  it('csv output: delimiter and header options', async () => {
    const json = await input('rows.json', FIXTURES.json!);
    const piped = await convert('json', 'csv', json, { delimiter: 'pipe', header: false });
    assert.deepEqual(parseCsv(piped, { delimiter: '|' }), ROWS.map((row) => COLUMNS.map((c) => row[c as keyof typeof row])));
  });

  it('header=false: rows become arrays, and arrays write back as rows', async () => {
    const csv = await input('plain.csv', 'a,b\n1,2\n');
    const arrays = await convert('csv', 'json', csv, { header: false });
    assert.deepEqual(JSON.parse(arrays), [['a', 'b'], ['1', '2']]);
    const back = await convert('json', 'tsv', await input('arrays.json', arrays));
    assert.equal(back, 'a\tb\n1\t2\n');
  });

  it('indent: 0 is one line, 4 is four spaces; yaml takes an indent too', async () => {
    const csv = await input('indent.csv', FIXTURES.csv!);
    const flat = await convert('csv', 'json', csv, { indent: 0 });
    assert.equal(flat, JSON.stringify(ROWS) + '\n');
    const wide = await convert('csv', 'json', csv, { indent: 4 });
    assert.equal(wide, JSON.stringify(ROWS, null, 4) + '\n');
    const yaml = await convert('json', 'yaml', await input('nested.json', '{"a":{"b":[1,2]}}'), { indent: 4 });
    assert.equal(yaml, 'a:\n    b:\n        - 1\n        - 2\n');
  });

  it('json -> yaml -> json keeps any document, not only tables', async () => {
    const value = { name: 'x', list: [1, 2.5, true, null, { deep: 'ü' }], empty: {} };
    const yaml = await convert('json', 'yaml', await input('doc.json', JSON.stringify(value)));
    const json = await convert('yaml', 'json', await input('doc.yaml', yaml));
    assert.deepEqual(JSON.parse(json), value);
  });

  it('nested values go into one CSV cell as JSON; keys missing in some records leave empty cells', async () => {
    const csv = await convert('ndjson', 'csv', await input('mixed.ndjson', '{"a":1,"n":{"x":[1]}}\n\n{"b":"y"}\n'));
    assert.equal(csv, 'a,n,b\n1,"{""x"":[1]}",\n,,y\n');
  });

  it('md -> html: Markdown that is not UTF-8 is read as Windows-1252 (as every text source)', async () => {
    const html = await convert('md', 'html', await input('latin1.md', Buffer.from('# Men\xfc\n\nCaf\xe9 \x93zwei\x94\n', 'latin1')), { full_document: false });
    assert.match(html, /<h1[^>]*>Menü<\/h1>/);
    assert.match(html, /Café “zwei”/);
  });

  it('md -> html without full_document gives only the body content', async () => {
    const html = await convert('md', 'html', await input('frag.md', '## Hi\n'), { full_document: false });
    assert.equal(html.trim(), '<h2>Hi</h2>');
  });

  it('md -> html keeps a list 200 levels deep and what follows it (markdown-it dropped both past 50); deeper than 500 levels is refused by line, never cut', async () => {
    const list = (levels: number) => `${Array.from({ length: levels }, (_, i) => `${'  '.repeat(i)}- level ${i + 1}`).join('\n')}\n\nAfter the list.\n`;
    const html = await convert('md', 'html', await input('deep.md', list(200)), { full_document: false });
    assert.match(html, /level 200</);
    assert.match(html, /After the list\./);
    await fails(convert('md', 'html', await input('deeper.md', `Fine.\n\n${'> '.repeat(20_000)}deep\n`)), 'input_invalid', /^Line 3: lists or quotes are nested more than 500 levels deep here/);
  });

  it('md -> html reads a YAML metadata block as pandoc does: its title, authors and date head the page, its keys are not text', async () => {
    const paper = [
      '---', "title: '`tqdm`: A Progress Meter'", 'tags:', ' - progressbar', 'authors:', ' - name: Casper da Costa-Luis', '   orcid: 0000-0002-7211-1557',
      'date: 16 February 2019', 'bibliography: paper.bib', '---', '', '# Summary', '', 'A progress bar.', '',
    ].join('\n');
    const html = await convert('md', 'html', await input('paper.md', paper));
    assert.match(html, /<title>tqdm: A Progress Meter<\/title>/);
    assert.match(html, /<header><h1><code>tqdm<\/code>: A Progress Meter<\/h1><p>Casper da Costa-Luis<\/p><p>16 February 2019<\/p><\/header>/);
    assert.match(html, /<h1>Summary<\/h1>\s*<p>A progress bar\.<\/p>/);
    assert.doesNotMatch(html, /progressbar|orcid|paper\.bib|<hr/);
    // Not a mapping, or never closed: Markdown as before (a rule, a list).
    assert.match(await convert('md', 'html', await input('list.md', '---\n- one\n- two\n---\n'), { full_document: false }), /^<hr \/>\s*<ul>/);
    assert.match(await convert('md', 'html', await input('open.md', '---\ntitle: x\n\nText.\n'), { full_document: false }), /^<hr \/>/);
    // A line number told past the block is the file's.
    await fails(convert('md', 'html', await input('deep-after.md', `---\ntitle: Deep\n---\n\n${'> '.repeat(20_000)}deep\n`)), 'input_invalid', /^Line 5: /);
  });
});

describe('one file, one answer: any CSV or TSV gives every row, under unique keys', () => {
  const rowsOf = (text: string) => JSON.parse(text) as unknown[];

  it('a one-line CSV is that row, not an empty list; header=true still takes it as names', async () => {
    const one = await input('one-line.csv', 'Ann,3,Oslo\n');
    assert.deepEqual(rowsOf(await convert('csv', 'json', one)), [['Ann', '3', 'Oslo']]);
    assert.deepEqual(parseYaml(await convert('csv', 'yaml', one)), [['Ann', '3', 'Oslo']]);
    assert.deepEqual(rowsOf(await convert('csv', 'json', one, { header: true })), []);
  });

  it('a first row of numbers is data: every row comes out, as arrays', async () => {
    const figures = await input('figures.csv', '1,2.5,-3\n4,5,6\n');
    assert.deepEqual(rowsOf(await convert('csv', 'json', figures)), [['1', '2.5', '-3'], ['4', '5', '6']]);
    assert.deepEqual(rowsOf(await convert('csv', 'json', figures, { header: true })), [{ 1: '4', '2.5': '5', '-3': '6' }]);
  });

  it('blank header cells are named after their column, repeated names numbered; every row kept', async () => {
    const sheet = await input('titles.csv', 'name,,name,C,,name_2\na,b,c,d,e,f\ng,h,i,j,k,l\n');
    const expected = [
      { name: 'a', B: 'b', name_3: 'c', C: 'd', E: 'e', name_2: 'f' },
      { name: 'g', B: 'h', name_3: 'i', C: 'j', E: 'k', name_2: 'l' },
    ];
    assert.deepEqual(rowsOf(await convert('csv', 'json', sheet)), expected);
    assert.deepEqual(parseYaml(await convert('csv', 'yaml', sheet)), expected);
    // csv -> csv writes the names it gave.
    assert.equal((await convert('csv', 'csv', sheet)).split('\n')[0], 'name,B,name_3,C,E,name_2');
  });

  it('rows of uneven length are read in every target: missing fields left out, extra ones named by their column', async () => {
    const ragged = await input('ragged.csv', 'name,age,city\nAnn,3,Oslo\nBob,4\nCid,5,Rome,extra\n');
    const expected = [{ name: 'Ann', age: '3', city: 'Oslo' }, { name: 'Bob', age: '4' }, { name: 'Cid', age: '5', city: 'Rome', D: 'extra' }];
    assert.deepEqual(rowsOf(await convert('csv', 'json', ragged)), expected);
    assert.deepEqual(parseYaml(await convert('csv', 'yaml', ragged)), expected);
    assert.deepEqual(parseCsv(await convert('csv', 'csv', ragged), { columns: true, relax_column_count: true }), expected.map((row) => Object.assign({ name: '', age: '', city: '', D: '' }, row)));
  });

  it('TSV is read literally: quote characters are part of their field, in every target', async () => {
    const quotes = await input('quotes.tsv', 'title\tsize\n5" floppy\t"big" one\nsay "hi\t"\n');
    const expected = [{ title: '5" floppy', size: '"big" one' }, { title: 'say "hi', size: '"' }];
    assert.deepEqual(rowsOf(await convert('tsv', 'json', quotes)), expected);
    assert.deepEqual(parseYaml(await convert('tsv', 'yaml', quotes)), expected);
    assert.deepEqual(parseCsv(await convert('tsv', 'csv', quotes), { columns: true }), expected);
    // and written literally again: a quote is a quote in TSV output too.
    assert.equal(await convert('json', 'tsv', await input('quotes.json', JSON.stringify(expected))), 'title\tsize\n5" floppy\t"big" one\nsay "hi\t"\n');
  });

  it('delimiter takes the character as people type it, beside the names', async () => {
    const semi = await input('typed.csv', 'a;b\n1;2,5\n');
    assert.deepEqual(rowsOf(await convert('csv', 'json', semi, { delimiter: ';' })), [{ a: '1', b: '2,5' }]);
    assert.equal(await convert('json', 'csv', await input('typed.json', '[{"a":1,"b":2}]'), { delimiter: '|' }), 'a|b\n1|2\n');
    const pair = pairs.find((p) => p.source === 'csv' && p.target === 'json')!;
    assert.ok(validateOptions(pair, { delimiter: ';' }).ok, 'the registry takes ;');
  });

  it("a spreadsheet's CSV (a chain's later step) is named by the user's format and read as convd wrote it", async () => {
    // A ; inside a cell must not be taken for the delimiter of a CSV that LibreOffice wrote with commas.
    const made = await input('sheet-step.csv', 'note,total\na;b;c,3\n');
    assert.deepEqual(rowsOf(await convert('csv', 'json', made, {}, { origin: 'xlsx' })), [{ note: 'a;b;c', total: '3' }]);
    const wide = Array.from({ length: 20_000 }, (_, i) => `c${i}`).join(',');
    await fails(convert('csv', 'json', await input('wide-sheet.csv', `${wide}\n${wide}\n`), {}, { origin: 'ods' }), 'input_invalid', /^The ODS file has 20000 columns/);
  });
});

describe('malformed data fails with input_invalid and points at the line', () => {
  it('csv: a quote never closed', async () => {
    await fails(convert('csv', 'json', await input('open.csv', 'a,b\n1,2\n3,"four\n5,6\n')), 'input_invalid', /line 3/);
  });

  it('csv: a record with the wrong number of fields, when relax_column_count=false asks for even rows', async () => {
    await fails(convert('csv', 'yaml', await input('short.csv', 'a,b,c\n1,2,3\n4,5\n'), { relax_column_count: false }), 'input_invalid', /line 3.*relax_column_count=true/);
  });

  it('tsv: bytes that are not UTF-8 fail when UTF-8 is asked for, and read as Windows-1252 by default', async () => {
    const bytes = Buffer.concat([Buffer.from('a\tb\n1\t2\n'), Buffer.from([0x33, 0x09, 0xff, 0xfe, 0x0a])]);
    await fails(convert('tsv', 'json', await input('latin.tsv', bytes), { encoding: 'utf-8' }), 'input_invalid', /UTF-8.*line 3/);
    const read = JSON.parse(await convert('tsv', 'json', await input('latin-auto.tsv', bytes))) as Record<string, string>[];
    assert.deepEqual(read[1], { a: '3', b: 'ÿþ' });
  });

  it('json: a syntax error on line 3', async () => {
    await fails(convert('json', 'csv', await input('bad.json', '[\n  {"a": 1},\n  {"a": }\n]')), 'input_invalid', /line 3, column 9/);
  });

  it('json: a single number is no table', async () => {
    await fails(convert('json', 'csv', await input('scalar.json', '42')), 'input_invalid', /single number/);
  });

  it('json: an array of numbers is no table for csv', async () => {
    await fails(convert('json', 'tsv', await input('numbers.json', '[1,2]')), 'input_invalid', /Record 1 is a number/);
  });

  it('ndjson: line 2 is not JSON', async () => {
    await fails(convert('ndjson', 'json', await input('bad.ndjson', '{"a":1}\n{"a":\n{"a":3}\n')), 'input_invalid', /Line 2/);
  });

  it('yaml: bad indentation on line 3', async () => {
    await fails(convert('yaml', 'json', await input('bad.yaml', 'a:\n  b: 1\n c: 2\n')), 'input_invalid', /line 3/);
  });

  it('yaml: a duplicate key', async () => {
    await fails(convert('yaml', 'json', await input('dupkey.yaml', 'a: 1\nb: 2\na: 3\n')), 'input_invalid', /line 3/);
  });

  it('yaml: an alias bomb is refused instead of expanded', async () => {
    const lines = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]'];
    for (let i = 0; i < 8; i++) {
      const prev = String.fromCharCode(97 + i);
      const next = String.fromCharCode(98 + i);
      lines.push(`${next}: &${next} [${Array(10).fill(`*${prev}`).join(',')}]`);
    }
    await fails(convert('yaml', 'json', await input('bomb.yaml', lines.join('\n'))), 'input_invalid', /alias/i);
  });

  it('yaml: one large list named by many aliases is refused by its expanded size', async () => {
    const items = Array.from({ length: 8000 }, (_, i) => `  - item number ${i} with some text`).join('\n');
    const aliases = Array.from({ length: 98 }, (_, i) => `copy${i}: *list`).join('\n');
    await fails(convert('yaml', 'json', await input('flat-bomb.yaml', `list: &list\n${items}\n${aliases}\n`)), 'input_invalid', /aliases would expand it past 1 MB/);
  });

  it('yaml: nested anchors multiply, and are weighed so', async () => {
    // Each level names the one below ten times: 100 KB of text, 10^4 times that expanded.
    const levels = ['a0: &a0 [' + Array.from({ length: 2000 }, () => '"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"').join(',') + ']'];
    for (let i = 1; i <= 4; i++) levels.push(`a${i}: &a${i} [${Array.from({ length: 10 }, () => `*a${i - 1}`).join(',')}]`);
    await fails(convert('yaml', 'json', await input('nested-bomb.yaml', `${levels.join('\n')}\n`)), 'input_invalid', /expand it past/);
  });

  it('yaml: a map of 100,000 keys is checked for duplicates in one pass (yaml\'s own check compares each with all)', async () => {
    const keys = Array.from({ length: 100_000 }, (_, i) => `k${i}: ${i}`).join('\n');
    const began = performance.now();
    const json = JSON.parse(await convert('yaml', 'json', await input('many-keys.yaml', `${keys}\n`), { indent: 0 })) as Record<string, number>;
    assert.equal(json.k99999, 99999);
    // A bound on complexity, not a speed figure: yaml's uniqueKeys took 15 s for 50,000 keys here.
    assert.ok(performance.now() - began < 20_000, `took ${Math.round(performance.now() - began)} ms`);
    await fails(convert('yaml', 'json', await input('late-dup.yaml', `${keys}\nk5: again\n`)), 'input_invalid', /line 100001, column 1: the key "k5" appears twice/);
  });

  it('yaml: fifty thousand small aliases are weighed in one pass, and refused', async () => {
    const aliases = Array.from({ length: 50_000 }, (_, i) => `k${i}: *x`).join('\n');
    const began = performance.now();
    await fails(convert('yaml', 'json', await input('many-aliases.yaml', `x: &x 1\n${aliases}\n`)), 'input_invalid', /names the anchor "x" more than 100 times/);
    // Aliases of many anchors: the count of all aliases stops them.
    const spread = Array.from({ length: 2000 }, (_, i) => `a${i}: &a${i} ${i}\nb${i}: *a${i}`).join('\n');
    await fails(convert('yaml', 'json', await input('spread-aliases.yaml', `${spread}\n`)), 'input_invalid', /more than 1000 aliases/);
    // A bound on complexity, not a speed figure: a check that walked the document for every
    // alias took 24 s for 20,000 of them here (minutes for these); a linear one well under a second.
    assert.ok(performance.now() - began < 20_000, `took ${Math.round(performance.now() - began)} ms`);
  });

  it('yaml: the anchors and aliases of ordinary configuration files pass', async () => {
    const yaml = 'defaults: &defaults\n  retries: 3\n  timeout: 10\nservice_a:\n  options: *defaults\nservice_b:\n  options: *defaults\n';
    const json = JSON.parse(await convert('yaml', 'json', await input('anchors.yaml', yaml))) as Record<string, Record<string, unknown>>;
    assert.deepEqual(json.service_b, { options: { retries: 3, timeout: 10 } });
  });

  it('csv: more columns than a spreadsheet holds', async () => {
    const header = Array.from({ length: 20_000 }, (_, i) => `c${i}`).join(',');
    await fails(convert('csv', 'json', await input('wide.csv', `${header}\n`)), 'input_invalid', /20000 columns at line 1; at most 16384/);
    const row = Array.from({ length: 20_000 }, () => '1').join(',');
    await fails(convert('csv', 'json', await input('wide-rows.csv', `${row}\n${row}\n`), { header: false }), 'input_invalid', /20000 columns at line 1/);
  });

  it('inputs over their format cap: file_too_large naming both sizes and the setting', async () => {
    const capped = createDataEngine({ inputCaps: { md: 1024, json: 2048, yaml: 4096 } });
    const run = (source: string, target: string, path: string) => capped.convert({
      inputPath: path, outputPath: join(dir, `capped-${++counter}.${target}`), source, target, variant: null, options: {},
      signal: new AbortController().signal, onProgress: () => undefined,
    });
    await fails(run('md', 'html', await input('long.md', 'x'.repeat(1025))), 'file_too_large', /Markdown file is 0 MB; this service reads Markdown files of at most 0 MB \(setting input_cap_mb\.md\)/);
    await fails(run('json', 'yaml', await input('long.json', `[${'1,'.repeat(1500)}1]`)), 'file_too_large', /input_cap_mb\.json/);
    await fails(run('yaml', 'json', await input('long.yaml', '- 1\n'.repeat(1100))), 'file_too_large', /input_cap_mb\.yaml/);
    // At the cap exactly, and for the streamed formats, whatever their size, nothing is refused.
    await run('md', 'html', await input('exact.md', 'x'.repeat(1024)));
    await run('ndjson', 'json', await input('many.ndjson', '{"a":1}\n'.repeat(1000)));
  });

  it('markdown that is neither UTF-8 nor Windows-1252 text (NUL bytes)', async () => {
    await fails(convert('md', 'html', await input('bad.md', Buffer.from([0x23, 0x20, 0xc3, 0x28, 0x00, 0x0a]))), 'input_invalid', /is not text: it is not UTF-8 and has NUL bytes/);
  });

  it('a cancelled conversion rejects with the reason', async () => {
    const many = Array.from({ length: 5000 }, (_, i) => `${i},x`).join('\n');
    const controller = new AbortController();
    const reason = new Error('cancelled');
    const running = convert('csv', 'json', await input('many.csv', `n,v\n${many}\n`), {}, { signal: controller.signal });
    controller.abort(reason);
    await assert.rejects(running, (error) => error === reason);
  });
});
