/**
 * Spreadsheets as data (headers as real sheets have them, cached values kept), through the chains the registry
 * composes (office -> csv -> data) with the real LibreOffice: a sheet whose first row has blank
 * and repeated cells -> json and yaml with every row under unique keys; a one-row sheet -> json
 * holding that row; and an xlsx whose cached formula result differs from what the formula
 * computes -> csv and pdf show the cached value (spreadsheets are not recalculated on load).
 * Fixtures are made here: LibreOffice writes xlsx/ods from a CSV, and the xlsx's cached value is
 * edited in its zip.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { createDataEngine } from '../../src/engines/data/data-engine.ts';
import { findOffice } from '../../src/engines/office/find-office.ts';
import { createOfficeEngine } from '../../src/engines/office/office-engine.ts';
import { validateOptions } from '../../src/formats/options.ts';
import { FormatRegistry } from '../../src/formats/registry.ts';
import { pdfPageTexts } from '../helpers/pdf-text.ts';

const run = promisify(execFile);
const office = await findOffice(process.env);
const required = process.env.CI === 'true';
const skip = office.ready || required ? false : `LibreOffice is not installed here: ${office.problem}`;

let registry: FormatRegistry;
let dir: string;
let counter = 0;

before(async () => {
  if (!office.ready) {
    if (required) assert.fail(`CI=true: the spreadsheet suites must not skip, but ${office.problem}`);
    return;
  }
  registry = await FormatRegistry.create([createOfficeEngine(), createDataEngine()]);
  dir = await mkdtemp(join(tmpdir(), 'convd-sheets-'));
});

after(async () => {
  await registry?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Runs source -> target as the registry offers it (a direct pair or a chain), with the pair's defaults. */
async function convert(inputPath: string, source: string, target: string, raw: Record<string, unknown> = {}): Promise<string> {
  const pair = registry.pair(source, target);
  assert.ok(pair, `${source} -> ${target} is offered`);
  const options = validateOptions(pair, raw);
  assert.ok(options.ok, JSON.stringify(options));
  const outputPath = join(dir, `out-${++counter}.${target}`);
  await registry.engine(pair.engine)!.convert({
    inputPath, outputPath, source, target, variant: pair.variants[0]?.key ?? null, options: options.options,
    signal: new AbortController().signal, onProgress: () => undefined,
  });
  return outputPath;
}

/** A spreadsheet of `format` that LibreOffice writes from these CSV rows. */
async function sheet(name: string, format: 'xlsx' | 'ods', csv: string): Promise<string> {
  const input = join(dir, `${name}.csv`);
  await writeFile(input, csv);
  return convert(input, 'csv', format);
}

describe('a spreadsheet becomes JSON or YAML whatever its first row holds', { skip }, () => {
  it('blank and repeated header cells: every row, under unique keys named as documented', async () => {
    // Row 1 as real sheets have it: a blank cell, a name twice, a number as a header.
    const xlsx = await sheet('titles', 'xlsx', 'name,,name,2024\nAnn,1,x,5\nBob,2,y,6\n');
    const expected = [{ name: 'Ann', B: '1', name_2: 'x', 2024: '5' }, { name: 'Bob', B: '2', name_2: 'y', 2024: '6' }];
    assert.deepEqual(JSON.parse(await readFile(await convert(xlsx, 'xlsx', 'json'), 'utf8')), expected);
    assert.deepEqual(parseYaml(await readFile(await convert(xlsx, 'xlsx', 'yaml'), 'utf8')), expected);
    const ods = await sheet('titles-ods', 'ods', 'name,,name,2024\nAnn,1,x,5\nBob,2,y,6\n');
    assert.deepEqual(JSON.parse(await readFile(await convert(ods, 'ods', 'json'), 'utf8')), expected);
  });

  it('a sheet of one row holds that row; header=true still reads it as names', async () => {
    const ods = await sheet('one-row', 'ods', 'Only,row,here\n');
    assert.deepEqual(JSON.parse(await readFile(await convert(ods, 'ods', 'json'), 'utf8')), [['Only', 'row', 'here']]);
    assert.deepEqual(JSON.parse(await readFile(await convert(ods, 'ods', 'json', { header: true }), 'utf8')), []);
  });

  it('a semicolon inside a cell is no delimiter: the sheet\'s CSV is read as LibreOffice wrote it', async () => {
    // LibreOffice writes the first line as `notes; with; semicolons,total`: more ; than , on it.
    const xlsx = await sheet('semicolons', 'xlsx', '"notes; with; semicolons",total\nx;y,3\n');
    assert.deepEqual(JSON.parse(await readFile(await convert(xlsx, 'xlsx', 'json'), 'utf8')), [{ 'notes; with; semicolons': 'x;y', total: '3' }]);
  });
});

describe('spreadsheets are not recalculated on load: the values the file holds are shown', { skip }, () => {
  it('an xlsx whose cached result (99) is not what its formula computes (42) -> csv and pdf show 99', async () => {
    const made = await sheet('formula', 'xlsx', '20,22,=A1+B1\n');
    const cached = join(dir, 'cached.xlsx');
    // The xlsx is a zip of XML: its formula cell's cached value <v>42</v> becomes 99.
    const script = [
      'import sys, zipfile',
      'src, dst = zipfile.ZipFile(sys.argv[1]), zipfile.ZipFile(sys.argv[2], "w", zipfile.ZIP_DEFLATED)',
      'for name in src.namelist():',
      '    data = src.read(name)',
      '    if name == "xl/worksheets/sheet1.xml":',
      '        assert b"<f aca=\\"false\\">A1+B1</f><v>42</v>" in data, data',
      '        data = data.replace(b"<v>42</v>", b"<v>99</v>")',
      '    dst.writestr(name, data)',
      'dst.close()',
    ].join('\n');
    await run(office.ready ? office.python : 'python3', ['-c', script, made, cached]);
    assert.equal(await readFile(await convert(cached, 'xlsx', 'csv'), 'utf8'), '20,22,99\n');
    const pdfText = (await pdfPageTexts(await convert(cached, 'xlsx', 'pdf'))).join('\n');
    assert.match(pdfText, /\b99\b/);
    assert.doesNotMatch(pdfText, /\b42\b/);
  });
});
