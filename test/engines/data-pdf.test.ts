/**
 * Data to PDF keeps every word: JSON, YAML, TSV and CSV go to PDF through the
 * data engine's page (page.ts) and Chromium, not LibreOffice's sheet, whose cells cut their text
 * at the column's width (354 of 406 words of a nested JSON were lost). Each PDF's text must hold
 * every word of the source's values, whole (a word cut at a cell's edge or broken over two lines
 * is missing); a table of 30 columns keeps every column.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { stringify as stringifyYaml } from 'yaml';
import { CHAIN_ENGINE } from '../../src/engines/chain.ts';
import { createDataEngine } from '../../src/engines/data/data-engine.ts';
import { createHtmlEngine } from '../../src/engines/html/html-engine.ts';
import { createOfficeEngine } from '../../src/engines/office/office-engine.ts';
import { validateOptions } from '../../src/formats/options.ts';
import { FormatRegistry } from '../../src/formats/registry.ts';
import { pdfPageTexts } from '../helpers/pdf-text.ts';

// LibreOffice too: csv -> pdf is its direct pair, which the data engine's page must win over.
const registry = await FormatRegistry.create([createDataEngine(), createHtmlEngine(), createOfficeEngine({ instances: 1 })]);
const chromium = registry.statuses.find((status) => status.name === 'html');
const skip = !chromium?.available && process.env.CI !== 'true' ? `Chromium is not installed: ${chromium?.detail ?? ''}` : false;

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'convd-data-pdf-'));
});
after(async () => {
  await registry.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Word `n` of a made-up language: 2 to 5 syllables, every one different, so each must be found on its own. */
const SYLLABLES = ['ka', 'lo', 'min', 'ter', 'vu', 'sha', 'pel', 'dro', 'ni', 'gast', 'bre', 'fo', 'quil', 'ze', 'rand', 'tu'];
function word(n: number): string {
  let text = '';
  let rest = n;
  do {
    text += SYLLABLES[rest % SYLLABLES.length];
    rest = Math.floor(rest / SYLLABLES.length);
  } while (rest > 0 || text.length < 4);
  return text + SYLLABLES[(n * 7) % SYLLABLES.length];
}
let next = 0;
const words = (count: number) => Array.from({ length: count }, () => word(next++)).join(' ');

const WORD = /[\p{L}\p{N}]+/gu;
/** Every word of every string, key and number in a value. */
function wordsOf(value: unknown, into = new Set<string>()): Set<string> {
  if (typeof value === 'string' || typeof value === 'number') for (const found of String(value).match(WORD) ?? []) into.add(found);
  else if (Array.isArray(value)) value.forEach((item) => wordsOf(item, into));
  else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      wordsOf(key, into);
      wordsOf(item, into);
    }
  }
  return into;
}

/** Converts `content` to PDF with the pair's defaults; returns the words of the PDF's text and the steps it took. */
async function toPdf(source: string, content: string): Promise<{ found: Set<string>; steps: string[] }> {
  const pair = registry.pair(source, 'pdf');
  assert.ok(pair, `${source} -> pdf is offered`);
  const inputPath = join(dir, `in.${source}`);
  const outputPath = join(dir, `out-${source}.pdf`);
  await writeFile(inputPath, content);
  const options = validateOptions(pair, {});
  assert.ok(options.ok);
  await registry.engine(CHAIN_ENGINE)!.convert({
    inputPath, outputPath, source, target: 'pdf', variant: null, options: options.options, signal: new AbortController().signal, onProgress: () => undefined,
  });
  const texts = await pdfPageTexts(outputPath);
  return { found: new Set(texts.join('\n').match(WORD) ?? []), steps: (pair.steps ?? [pair]).map((step) => `${step.engine}:${step.target}`) };
}

/** Every word found, whole; then the route: the data engine's page, printed by Chromium. */
function assertEveryWord(expected: Set<string>, { found, steps }: { found: Set<string>; steps: string[] }): void {
  const missing = [...expected].filter((w) => !found.has(w));
  assert.deepEqual(missing, [], `${missing.length} of ${expected.size} words missing or cut (${steps.join(' -> ')})`);
  assert.deepEqual(steps, ['data:html', 'html:pdf'], 'through the data engine\'s page and Chromium');
}

/** Nested objects and arrays, long strings: 406 words, as in the report. */
function nestedDocument() {
  next = 0;
  return {
    title: words(6),
    meta: { authors: [{ name: words(2), bio: words(60) }, { name: words(2), bio: words(45) }], tags: [words(1), words(1), words(1)], year: 2024 },
    chapters: Array.from({ length: 4 }, () => ({
      heading: words(5),
      paragraphs: [words(40), words(30)],
      notes: { summary: words(12), refs: [words(3), words(3)] },
    })),
    appendix: words(30),
  };
}

describe('data -> pdf keeps every word', { skip }, () => {
  it('a nested JSON document (406 words): every word, whole', async () => {
    const document = nestedDocument();
    const expected = wordsOf(document);
    assert.ok(expected.size >= 400, `${expected.size} words`);
    assertEveryWord(expected, await toPdf('json', JSON.stringify(document)));
  });

  it('a YAML document: every word, whole', async () => {
    const document = nestedDocument();
    assertEveryWord(wordsOf(document), await toPdf('yaml', stringifyYaml(document)));
  });

  it('a JSON table of 30 columns with a long text column: every column, every word', async () => {
    next = 1000;
    const names = Array.from({ length: 30 }, () => word(next++));
    const rows = Array.from({ length: 6 }, () => Object.fromEntries(names.map((name, index) => [name, index === 3 ? words(50) : words(index % 3 === 0 ? 3 : 1)])));
    const pdf = await toPdf('json', JSON.stringify(rows));
    assertEveryWord(new Set(names), pdf);
    assertEveryWord(wordsOf(rows), pdf);
  });

  for (const [source, delimiter] of [['tsv', '\t'], ['csv', ',']] as const) {
    it(`a ${source.toUpperCase()} with long cells: every word, whole`, async () => {
      next = 3000;
      const header = ['id', 'name', 'description', 'notes', 'city'];
      const rows = Array.from({ length: 12 }, (_, index) => [String(index + 1), words(2), words(40), words(15), words(1)]);
      const pdf = await toPdf(source, [header, ...rows].map((cells) => cells.join(delimiter)).join('\n') + '\n');
      assertEveryWord(wordsOf([header, rows]), pdf);
    });
  }
});
