import { mkdir, rm } from 'node:fs/promises';
import { basename, dirname, extname, join } from 'node:path';
import type { ConversionOptions } from '../model/conversion.ts';
import type { ConversionPair, FormatInfo } from './pairs.ts';
import { convertOrHandOver } from './hand-over.ts';
import type { Engine, EngineJob, EngineOutput, EngineStatus } from './types.ts';

/** The engine name of composed pairs (ConversionPair.steps). */
export const CHAIN_ENGINE = 'chain';

/** Finds the engine of a step and the steps of a composed pair. */
export interface ChainLookup {
  engine(name: string): Engine | undefined;
  /** The pair a conversion with these options runs (FormatRegistry.pairFor). */
  pair(source: string, target: string, options: ConversionOptions): ConversionPair | undefined;
}

/**
 * The options of one step: those of the conversion that the step's pair describes, less, for an
 * earlier step, those the last step declares too: the conversion's option of that name is the
 * last step's (composedPair), validated by its descriptor (`pages=all` of a document's PNGs is
 * the pages to render, not LibreOffice's page range).
 */
function optionsFor(step: ConversionPair, options: ConversionOptions, lastsOwn: ReadonlySet<string>): ConversionOptions {
  const own: ConversionOptions = {};
  for (const descriptor of step.options) {
    if (lastsOwn.has(descriptor.name)) continue;
    const value = options[descriptor.name] ?? descriptor.default;
    if (value !== undefined && value !== null) own[descriptor.name] = value;
  }
  return own;
}

/**
 * Runs a composed pair: each step on its own engine, into a directory of
 * its own beside the output, the file named as the input (the user's name, where the runner gave
 * it: a sheet made of an intermediate CSV is named after it), with the progress split over the steps, so the runner still makes one engine call and
 * the conversion stays one conversion with one time limit and one charge. The intermediate file
 * is removed whatever the outcome. The first step starts the clock (or, when its engine does not
 * start one itself, the chain does as it begins).
 */
export function createChainEngine(lookup: ChainLookup): Engine {
  return {
    name: CHAIN_ENGINE,
    startsClock: true,
    probe: async (): Promise<EngineStatus> => ({ name: CHAIN_ENGINE, available: true, binary: 'the engines of its steps' }),
    pairs: (): ConversionPair[] => [],
    formats: (): FormatInfo[] => [],
    async convert(job: EngineJob): Promise<EngineOutput | void> {
      const steps = lookup.pair(job.source, job.target, job.options)?.steps;
      if (!steps || steps.length === 0) throw new Error(`no chain for ${job.source} -> ${job.target}`);
      let input = job.inputPath;
      let produced: EngineOutput | void = undefined;
      // Every step's warnings: the docx's fonts, say, matter to the PNG made of its PDF.
      const warnings: NonNullable<EngineOutput['warnings']> = [];
      const made: string[] = [];
      const stem = basename(job.inputPath, extname(job.inputPath)) || 'file';
      const lastsOwn = new Set(steps.at(-1)!.options.map((option) => option.name));
      // The variant chosen is the last step's that has it (an image's page size, where OCR follows it).
      const variantStep = steps.findLastIndex((step) => step.variants.some((variant) => variant.key === job.variant));
      let clockStarted = false;
      const startClock = () => {
        if (clockStarted) return;
        clockStarted = true;
        job.startClock?.();
      };
      try {
        for (const [index, step] of steps.entries()) {
          const engine = lookup.engine(step.engine);
          if (!engine) throw new Error(`the engine ${step.engine} of a chain step is not available`);
          const last = index === steps.length - 1;
          let output = job.outputPath;
          if (!last) {
            const dir = join(dirname(job.outputPath), `.step${index + 1}-${basename(job.outputPath)}`);
            made.push(dir);
            await mkdir(dir, { mode: 0o700 });
            output = join(dir, `${stem}.${step.target}`);
          }
          if (!engine.startsClock) startClock();
          job.signal.throwIfAborted();
          const share = 100 / steps.length;
          const stepJob: EngineJob = {
            inputPath: input, outputPath: output, source: step.source, target: step.target,
            // The others run their default.
            variant: index === variantStep ? job.variant : step.variants[0]?.key ?? null,
            options: optionsFor(step, job.options, last ? new Set() : lastsOwn),
            signal: job.signal,
            onProgress: (percent) => job.onProgress(index * share + (percent * share) / 100),
            maxOutputBytes: job.maxOutputBytes,
            ...(job.maxPages !== undefined ? { maxPages: job.maxPages } : {}),
            ...(job.maxOcrPages !== undefined ? { maxOcrPages: job.maxOcrPages } : {}),
            timeLimitMs: job.timeLimitMs,
            startClock,
            ...(job.tenant !== undefined ? { tenant: job.tenant } : {}),
            // The URL a file came from belongs to the file, not to what the first step made of it.
            ...(index === 0 && job.sourceUrl !== undefined ? { sourceUrl: job.sourceUrl } : {}),
            ...(index > 0 ? { origin: job.origin ?? job.source } : {}),
            ...(last ? {} : { destination: job.destination ?? job.target }),
            // The quick lane's conversion is quick in each of its steps (their engines' warm spares).
            ...(job.quick ? { quick: true } : {}),
          };
          // A step's engine may hand its file to the step's fallback, as the runner does for a pair.
          produced = await convertOrHandOver(engine, step, stepJob, (name) => lookup.engine(name));
          warnings.push(...(produced?.warnings ?? []));
          input = output;
        }
        return warnings.length > 0 ? { ...produced, warnings } : produced;
      } finally {
        for (const dir of made) await rm(dir, { recursive: true, force: true });
      }
    },
  };
}

/** The engine, kind and options of a pair made of two steps. */
export function composedPair(first: ConversionPair, second: ConversionPair, heavierKind: ConversionPair['kind']): ConversionPair {
  const names = new Set(second.options.map((option) => option.name));
  return {
    source: first.source,
    target: second.target,
    engine: CHAIN_ENGINE,
    kind: heavierKind,
    // The last step's options, and the first step's that it does not have itself (a password).
    options: [...second.options, ...first.options.filter((option) => !names.has(option.name))],
    variants: second.variants,
    steps: [first, second],
  };
}
