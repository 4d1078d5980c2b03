/**
 * Chains: the registry composes two steps through a result an engine declares a
 * faithful intermediate (an office document's PDF, a table's CSV), wherever no engine converts
 * the source to the target itself. Generated tests for a set of chains that covers every source
 * and every second step the registry offers, each output decoded as its last step's engine's own
 * suite decodes it; plus what a chain is: one engine call
 * with progress over both steps, the weight of its heaviest step, the time of both steps, no
 * intermediate file left behind, a failing step failing the whole.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ConversionFailure } from '../../src/errors/api-error.ts';
import { CHAIN_ENGINE, createChainEngine } from '../../src/engines/chain.ts';
import { defaultEngines } from '../../src/engines/catalog.ts';
import type { Engine, EngineJob } from '../../src/engines/types.ts';
import { validateOptions } from '../../src/formats/options.ts';
import { FormatRegistry } from '../../src/formats/registry.ts';
import type { ConversionPair } from '../../src/engines/pairs.ts';
import { defaultServiceConfig } from '../../src/service/config.ts';
import { assertOutput, makeFixture, mediaTools, type Fixture } from '../helpers/registry-pairs-fixtures.ts';

const config = defaultServiceConfig();
const registry = await FormatRegistry.create(defaultEngines({ maxInputPixels: config.maxInputPixels, engines: { office: { ...config.engines.office, instances: 2 } } }), config.creditWeights);
const chains = registry.allPairs().filter((pair) => pair.engine === CHAIN_ENGINE);
/**
 * The chains converted here: a set that covers every source and every second step (its engine,
 * its intermediate and its target) at least once. A chain's first step is one of its engine's
 * pairs, which that engine's suite converts each (registry-pairs, engines-office, ...), so what a
 * chain adds is the hand-over and its last step; all of them ran 2-3 minutes of the suite.
 */
const covering = (() => {
  const secondStep = (pair: ConversionPair) => { const last = pair.steps![pair.steps!.length - 1]!; return `${last.engine}:${last.source}->${last.target}`; };
  const sources = new Set<string>();
  const lasts = new Set<string>();
  const chosen: ConversionPair[] = [];
  for (const pair of chains) {
    if (sources.has(pair.source) && lasts.has(secondStep(pair))) continue;
    sources.add(pair.source);
    lasts.add(secondStep(pair));
    chosen.push(pair);
  }
  return chosen;
})();
const tools = await mediaTools();
let dir: string;
let counter = 0;
const fixtures = new Map<string, Promise<Fixture>>();

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'convd-chains-'));
});
after(async () => {
  console.log(`chains: ${chains.length} offered; ${covering.length} converted, covering every source and every second step`);
  await registry.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

function fixture(source: string): Promise<Fixture> {
  let found = fixtures.get(source);
  if (!found) fixtures.set(source, (found = makeFixture(dir, source, tools)));
  return found;
}

function job(pair: ConversionPair, inputPath: string, extra: Partial<EngineJob> = {}): EngineJob {
  const options = validateOptions(pair, {});
  assert.ok(options.ok);
  return {
    inputPath, outputPath: join(dir, `out-${++counter}.${pair.target}`), source: pair.source, target: pair.target,
    variant: pair.variants[0]?.key ?? null, options: options.options, signal: new AbortController().signal, onProgress: () => undefined, ...extra,
  };
}

describe('every source\'s chains and every second step convert and decode', { concurrency: 2 }, () => {
  for (const pair of covering) {
    it(`${pair.source} -> ${pair.target}`, async () => {
      assert.equal(pair.steps?.length, 2, 'two steps');
      const input = await fixture(pair.source);
      const made = job(pair, input.path);
      await registry.engine(CHAIN_ENGINE)!.convert(made);
      await assertOutput(pair, made.outputPath, input, tools);
    });
  }
});

describe('what a chain is', () => {
  const tableChain = () => chains.find((pair) => pair.source === 'json' && pair.target === 'xlsx');

  it('two steps through a declared intermediate, only where no engine does it itself', () => {
    for (const pair of chains) {
      const [first, second] = pair.steps!;
      assert.ok(first!.intermediate, `${pair.source} -> ${first!.target} is declared a step`);
      assert.equal(first!.target, second!.source);
      assert.notEqual(first!.engine, second!.engine);
      assert.notEqual(pair.source, pair.target);
    }
    // csv -> json is the data engine's own: never a chain through something else.
    assert.equal(registry.pair('csv', 'json')?.engine, 'data');
  });

  it('costs the weight of its heaviest step, once; options of both steps; the last step\'s variants', { skip: tableChain() ? false : 'no office engine here' }, () => {
    const pair = tableChain()!;
    assert.equal(registry.creditWeight(pair), Math.max(...pair.steps!.map((step) => config.creditWeights[step.kind])));
    assert.equal(registry.creditWeight(pair), 2, 'data 1 and document 2: 2, not 3');
    const names = pair.options.map((option) => option.name);
    assert.ok(names.includes('password'), 'the office step\'s password');
    assert.ok(names.includes('header'), 'the data step\'s header');
    assert.deepEqual(pair.variants, pair.steps![1]!.variants);
  });

  it('each step is told what it is for: a later step the format sent (origin), an earlier one the format the chain ends in (destination); the quick lane\'s conversion is quick in every step', async () => {
    const seen: EngineJob[] = [];
    const recorder = (name: string): Engine => ({
      name, probe: async () => ({ name, available: true }), pairs: () => [], formats: () => [],
      async convert(step) {
        seen.push(step);
        await writeFile(step.outputPath, 'made');
      },
    });
    const step = (engine: string, source: string, target: string) => ({ engine, source, target, kind: 'document', options: [], variants: [] }) as unknown as ConversionPair;
    const steps = [step('first', 'ods', 'pdf'), step('second', 'pdf', 'txt')];
    const engines = new Map([['first', recorder('first')], ['second', recorder('second')]]);
    const chain = createChainEngine({ engine: (name) => engines.get(name), pair: () => ({ ...step('chain', 'ods', 'txt'), steps }) });
    const input = join(dir, 'sheet.ods');
    await writeFile(input, 'sheet');
    const base = { inputPath: input, source: 'ods', target: 'txt', variant: null, options: {}, signal: new AbortController().signal, onProgress: () => undefined };
    await chain.convert({ ...base, outputPath: join(dir, 'quick.txt'), quick: true });
    await chain.convert({ ...base, outputPath: join(dir, 'regular.txt') });
    assert.deepEqual(seen.map((job) => [job.source, job.target, job.origin, job.destination, job.quick]), [
      ['ods', 'pdf', undefined, 'txt', true], ['pdf', 'txt', 'ods', undefined, true],
      ['ods', 'pdf', undefined, 'txt', undefined], ['pdf', 'txt', 'ods', undefined, undefined],
    ]);
  });

  it('a sheet -> txt is its cells\' text: the page style\'s header and footer (the sheet\'s name, "Page 1") are not printed on its way', { skip: tableChain() ? false : 'no office engine here' }, async () => {
    const pair = chains.find((candidate) => candidate.source === 'fods' && candidate.target === 'txt');
    assert.ok(pair, 'fods -> txt is a chain');
    const input = join(dir, 'budget.fods');
    await writeFile(input, `<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.2" office:mimetype="application/vnd.oasis.opendocument.spreadsheet">
<office:body><office:spreadsheet><table:table table:name="BUDGETSHEET"><table:table-row><table:table-cell office:value-type="string"><text:p>CELL-TEXT</text:p></table:table-cell></table:table-row></table:table></office:spreadsheet></office:body></office:document>`);
    const made = job(pair, input);
    await registry.engine(CHAIN_ENGINE)!.convert(made);
    const text = await readFile(made.outputPath, 'utf8');
    assert.match(text, /CELL-TEXT/);
    assert.doesNotMatch(text, /BUDGETSHEET|Page 1/, text);
  });

  it('progress runs over both steps, and no intermediate file is left', { skip: tableChain() ? false : 'no office engine here' }, async () => {
    const pair = tableChain()!;
    const progress: number[] = [];
    const input = join(dir, 'rows.json');
    await writeFile(input, JSON.stringify([{ a: 1, b: 'x' }, { a: 2, b: 'y' }]));
    const made = job(pair, input, { onProgress: (percent) => progress.push(percent) });
    await registry.engine(CHAIN_ENGINE)!.convert(made);
    assert.ok(progress.some((p) => p < 50) && progress.some((p) => p >= 50), `progress ${progress.join(',')}`);
    assert.ok(progress.every((p, i) => i === 0 || p >= progress[i - 1]!), 'never goes back');
    assert.deepEqual((await readdir(dir)).filter((name) => name.includes('.step')), []);
  });

  it('a failing step fails the chain with its own code, and leaves nothing', { skip: tableChain() ? false : 'no office engine here' }, async () => {
    const pair = tableChain()!;
    const input = join(dir, 'not-a-table.json');
    await writeFile(input, '"just a string"');
    const made = job(pair, input);
    await assert.rejects(registry.engine(CHAIN_ENGINE)!.convert(made), (error) => error instanceof ConversionFailure && error.code === 'input_invalid');
    assert.deepEqual((await readdir(dir)).filter((name) => name.includes('.step')), []);
  });
});
