/**
 * The column guard counts a CSV record's fields as csv-parse does, so a record past the limit is
 * refused before csv-parse builds it: checked against csv-parse itself on generated text, with
 * quotes, escaped quotes, comments, both line breaks and a BOM, and on a million-column file
 * read through the data engine's reader.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parse as parseCsv } from 'csv-parse/sync';
import { ConversionFailure } from '../../src/errors/api-error.ts';
import { ColumnGuard, type ColumnGuardRules } from '../../src/engines/data/column-guard.ts';
import { MAX_CSV_COLUMNS, readCsv } from '../../src/engines/data/read.ts';

/** A small deterministic generator, so a failure can be replayed from its seed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

const PIECES = ['a', 'bc', ',', ';', '\t', '"', '""', '\n', '\r\n', '\r', '#', '//', ' ', 'é'];

function generated(seed: number): string {
  const next = random(seed);
  const length = 5 + Math.floor(next() * 60);
  let text = next() < 0.2 ? '\ufeff' : '';
  for (let i = 0; i < length; i++) text += PIECES[Math.floor(next() * PIECES.length)];
  return text;
}

/** The first widest record csv-parse reads: its field count and the line it ends on. */
function widest(text: string, rules: ColumnGuardRules): { columns: number; line: number } | null {
  let records: { record: string[]; info: { lines: number } }[];
  try {
    records = parseCsv(text, {
      delimiter: rules.delimiter,
      bom: true,
      skip_empty_lines: true,
      relax_column_count: true,
      info: true,
      ...(rules.quoted ? {} : { quote: false }),
      ...(rules.comment ? { comment: rules.comment, comment_no_infix: true } : {}),
    }) as unknown as { record: string[]; info: { lines: number } }[];
  } catch {
    return null;
  }
  let best: { columns: number; line: number } | null = null;
  for (const { record, info } of records) if (!best || record.length > best.columns) best = { columns: record.length, line: info.lines };
  return best;
}

/** What the guard reports, the text fed to it in chunks of `size`. */
function guarded(text: string, rules: ColumnGuardRules, size: number): { columns: number; line: number } | null {
  const guard = new ColumnGuard(rules);
  for (let at = 0; at < text.length; at += size) {
    const wide = guard.read(text.slice(at, at + size));
    if (wide) return wide;
  }
  return guard.end();
}

describe('the CSV column guard', () => {
  it('finds the same widest record as csv-parse on 10,000 generated texts, in any chunking', () => {
    let compared = 0;
    for (let seed = 1; seed <= 10_000; seed++) {
      const text = generated(seed);
      const rules: ColumnGuardRules = {
        delimiter: [',', ';', '\t'][seed % 3]!,
        quoted: seed % 5 !== 0,
        comment: [null, '#', '//', ';'][seed % 4]!,
        maxColumns: 0,
      };
      if (rules.comment === rules.delimiter) continue;
      const expected = widest(text, rules);
      if (!expected || expected.columns < 2) continue;
      compared++;
      const replay = `seed ${seed}: ${JSON.stringify(text)} ${JSON.stringify(rules)}`;
      // At the widest record's width nothing is refused; one less, and that record is.
      assert.equal(guarded(text, { ...rules, maxColumns: expected.columns }, text.length), null, replay);
      for (const size of [1, 2, 7, text.length]) {
        const wide = guarded(text, { ...rules, maxColumns: expected.columns - 1 }, size);
        assert.deepEqual(wide, expected, `${replay} in chunks of ${size}`);
      }
    }
    assert.ok(compared > 1500, `only ${compared} texts were valid CSV`);
  });

  it('refuses a million-column record through the reader with its whole count and line', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'convd-columns-'));
    try {
      const path = join(dir, 'wide.csv');
      await writeFile(path, `id,name\n1,a\n${'1,'.repeat(999_999)}1\n2,b\n`);
      const reading = readCsv(path, { delimiter: ',', header: true, what: 'CSV file' });
      await assert.rejects(
        (async () => {
          for await (const row of reading) assert.ok(row);
        })(),
        (error: unknown) => error instanceof ConversionFailure && error.code === 'input_invalid' && /1000000 columns at line 3; at most 16384/.test(error.message),
      );
      assert.equal(MAX_CSV_COLUMNS, 16_384);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('reads a record of exactly the limit, quoted delimiters not counted', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'convd-columns-'));
    try {
      const path = join(dir, 'edge.csv');
      const cells = Array.from({ length: MAX_CSV_COLUMNS }, (_, i) => (i % 2 ? `"x,${i}"` : `${i}`));
      await writeFile(path, `${cells.join(',')}\n`);
      const rows: unknown[][] = [];
      for await (const row of readCsv(path, { delimiter: ',', header: false, what: 'CSV file' })) rows.push(row as unknown[]);
      assert.equal(rows.length, 1);
      assert.equal(rows[0]!.length, MAX_CSV_COLUMNS);
      assert.equal(rows[0]![1], 'x,1');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
