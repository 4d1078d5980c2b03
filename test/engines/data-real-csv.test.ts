/**
 * CSV as real files have it, through the daemon: rows of uneven length
 * (`relax_column_count`), comment lines (`comment`), a BOM, a `;` delimiter found by itself,
 * Windows-1252 text (`encoding`, auto by default), and csv -> csv, json -> json to reformat. Every
 * output is parsed back.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { parse } from 'csv-parse/sync';
import { api, startDaemon, type DaemonHandle } from '../helpers/daemon.ts';

interface Outcome {
  status: string;
  error: { code: string; message: string } | null;
  text: string;
}

let daemon: DaemonHandle;

async function convert(bytes: Buffer | string, name: string, target: string, fields: Record<string, string> = {}): Promise<Outcome> {
  const form = new FormData();
  for (const [key, value] of Object.entries({ target, wait: '30', ...fields })) form.append(key, value);
  form.append('file', new Blob([typeof bytes === 'string' ? Buffer.from(bytes) : bytes]), name);
  const created = await api(daemon, '/conversions', { method: 'POST', body: form });
  assert.equal(created.status, 200, JSON.stringify(created.body));
  const conversion = created.body as { id: string; status: string; error: Outcome['error'] };
  if (conversion.status !== 'succeeded') return { status: conversion.status, error: conversion.error, text: '' };
  const download = await fetch(`${daemon.baseUrl}/conversions/${conversion.id}/download`, { headers: { authorization: `Bearer ${daemon.apiKey}` } });
  return { status: conversion.status, error: null, text: await download.text() };
}

describe('real CSV files', () => {
  before(async () => {
    daemon = await startDaemon();
  });

  after(async () => {
    await daemon?.dispose();
  });

  it('rows of uneven length: read by default (as pdf and xlsx read them), refused with a hint under relax_column_count=false', async () => {
    const ragged = 'name,age,city\nAnn,3,Oslo\nBob,4\nCid,5,Rome,extra\n';
    const refused = await convert(ragged, 'people.csv', 'json', { relax_column_count: 'false' });
    assert.equal(refused.status, 'failed');
    assert.equal(refused.error?.code, 'input_invalid');
    assert.match(refused.error!.message, /relax_column_count=true/);
    const read = await convert(ragged, 'people.csv', 'json');
    assert.equal(read.status, 'succeeded', JSON.stringify(read.error));
    assert.deepEqual(JSON.parse(read.text), [{ name: 'Ann', age: '3', city: 'Oslo' }, { name: 'Bob', age: '4' }, { name: 'Cid', age: '5', city: 'Rome', D: 'extra' }]);
  });

  it('comment lines skipped, the delimiter found past them; # inside a field kept', async () => {
    const commented = '# exported from the shop, 2026\n# columns: item; price\nitem;price\nBolt #3;0,25\nNut;0,10\n';
    const read = await convert(commented, 'prices.csv', 'json', { comment: '#' });
    assert.equal(read.status, 'succeeded', JSON.stringify(read.error));
    assert.deepEqual(JSON.parse(read.text), [{ item: 'Bolt #3', price: '0,25' }, { item: 'Nut', price: '0,10' }]);
  });

  it('a BOM and CRLF lines from a European spreadsheet: clean column names, ; found by itself', async () => {
    const excel = '\ufeffname;city\r\nAnn;Köln\r\nBob;Zürich\r\n';
    const read = await convert(excel, 'excel.csv', 'yaml');
    assert.equal(read.status, 'succeeded', JSON.stringify(read.error));
    assert.match(read.text, /^- name: Ann\n {2}city: Köln\n- name: Bob\n {2}city: Zürich\n$/);
  });

  it('Windows-1252 text: read by default (auto), refused when utf-8 is asked for', async () => {
    const latin = Buffer.from('name;city;note\nAnn;Zürich;café – “quoted”\n', 'latin1');
    // The en dash and curly quotes are Windows-1252's own bytes (0x96, 0x93, 0x94), not Latin-1's.
    const windows = Buffer.concat([Buffer.from('name;city;note\nAnn;Z\xfcrich;caf\xe9 ', 'latin1'), Buffer.from([0x96, 0x20, 0x93]), Buffer.from('quoted'), Buffer.from([0x94, 0x0a])]);
    for (const [bytes, note] of [[latin, /^caf/], [windows, /^café – “quoted”$/]] as const) {
      const read = await convert(bytes, 'latin.csv', 'json');
      assert.equal(read.status, 'succeeded', JSON.stringify(read.error));
      const [row] = JSON.parse(read.text) as { city: string; note: string }[];
      assert.equal(row!.city, 'Zürich');
      assert.match(row!.note, note);
    }
    const strict = await convert(windows, 'latin.csv', 'json', { encoding: 'utf-8' });
    assert.equal(strict.status, 'failed');
    assert.match(strict.error!.message, /not valid UTF-8/);
  });

  it('csv -> csv rewrites the delimiter; json -> json the indentation', async () => {
    const semicolons = await convert('a;b\n1;"x;y"\n', 'in.csv', 'csv', { output_delimiter: 'comma' });
    assert.equal(semicolons.status, 'succeeded', JSON.stringify(semicolons.error));
    assert.deepEqual(parse(semicolons.text), [['a', 'b'], ['1', 'x;y']]);
    assert.match(semicolons.text, /^a,b\n1,x;y\n$/);
    const oneLine = await convert('{\n  "a": [1, 2],\n  "b": {"c": true}\n}\n', 'in.json', 'json', { indent: '0' });
    assert.equal(oneLine.status, 'succeeded', JSON.stringify(oneLine.error));
    assert.equal(oneLine.text, '{"a":[1,2],"b":{"c":true}}\n');
  });

  const debian = '/usr/share/distro-info/debian.csv';
  it("Debian's own release table (uneven rows) to JSON", { skip: existsSync(debian) ? false : `${debian} is not on this machine` }, async () => {
    const text = readFileSync(debian, 'utf8');
    const read = await convert(text, 'debian.csv', 'json', { relax_column_count: 'true' });
    assert.equal(read.status, 'succeeded', JSON.stringify(read.error));
    const rows = JSON.parse(read.text) as Record<string, string>[];
    assert.equal(rows.length, text.trim().split('\n').length - 1);
    assert.ok(rows.some((row) => row.codename === 'Bookworm'));
  });
});
