import { CHAIN_ENGINE, composedPair, createChainEngine } from '../engines/chain.ts';
import type { Engine, EngineStatus } from '../engines/types.ts';
import type { ConversionKind, ConversionPair, FormatInfo } from '../engines/pairs.ts';

export type CreditWeights = Record<ConversionKind, number>;

/** The results a chain may pass through, in order of preference. */
const CHAIN_VIA = ['pdf', 'html', 'docx', 'odt', 'csv', 'png'];
export const DEFAULT_CREDIT_WEIGHTS: CreditWeights = { image: 1, pdf: 1, data: 1, audio: 2, document: 2, video: 4, ocr: 3 };

/**
 * Source -> target pairs of every available engine. Built once at start-up from the engines'
 * own declarations, so /formats, option validation, credit weights and the worker pool all read
 * the same table and a new engine only adds entries.
 */
export class FormatRegistry {
  private readonly pairsBySource = new Map<string, Map<string, ConversionPair>>();
  private readonly formatsByKey = new Map<string, FormatInfo>();
  private readonly formatsByExtension = new Map<string, FormatInfo>();
  private readonly engines = new Map<string, Engine>();
  private fileOptionNames: ReadonlySet<string> | undefined;
  /** Kinds of the pairs offered: the weights that can apply. */
  private readonly kinds = new Set<ConversionPair['kind']>();

  private constructor(
    readonly statuses: EngineStatus[],
    private readonly weights: CreditWeights,
    /** Every engine it was made with, available or not: all are closed with it. */
    private readonly all: Engine[],
  ) {}

  /** Probes every engine; one that is unavailable contributes no pairs (no pair offered that cannot run). */
  static async create(engines: Engine[], weights: CreditWeights = DEFAULT_CREDIT_WEIGHTS): Promise<FormatRegistry> {
    const statuses = await Promise.all(
      engines.map((engine) =>
        engine.probe().catch((error: unknown): EngineStatus => ({
          name: engine.name, available: false, detail: error instanceof Error ? error.message : String(error),
        })),
      ),
    );
    const registry = new FormatRegistry(statuses, weights, engines);
    const fallbacks: ConversionPair[] = [];
    const optionalSteps: ConversionPair[] = [];
    engines.forEach((engine, index) => {
      for (const info of engine.formats()) registry.addFormat(info);
      if (!statuses[index]?.available) return;
      registry.engines.set(engine.name, engine);
      for (const pair of engine.pairs()) {
        if (pair.fallbackOnly) fallbacks.push(pair);
        if (pair.onOption) optionalSteps.push(pair);
        if (!pair.fallbackOnly && !pair.onOption) registry.addPair(pair);
      }
    });
    registry.attachFallbacks(fallbacks);
    registry.composeChains();
    registry.attachOptionalSteps(optionalSteps);
    return registry;
  }

  /**
   * Two-step chains: from a source, through a result its engine declares
   * `intermediate` (a PDF, a docx, a CSV), on to what another engine makes of that, wherever no
   * engine converts the source to that target itself. Only direct pairs are composed, never more
   * than two steps; where several intermediates lead to a target, the first in CHAIN_VIA wins.
   * A direct pair yields to a chain only where the chain's first step says it makes that target
   * better (ConversionPair.preferredFor); the direct pair is still composed from (csv -> pdf -> png).
   */
  private composeChains(): void {
    const direct = this.allPairs();
    const composed: ConversionPair[] = [];
    for (const via of CHAIN_VIA) {
      for (const first of direct.filter((pair) => pair.target === via && pair.intermediate)) {
        for (const second of direct.filter((pair) => pair.source === via && pair.engine !== first.engine && !pair.describesInput && (first.intermediateFor?.includes(pair.target) ?? true))) {
          const existing = this.pair(first.source, second.target);
          const preferred = first.preferredFor?.includes(second.target) === true;
          if (second.target === first.source || (existing && !preferred) || composed.some((c) => c.source === first.source && c.target === second.target)) continue;
          composed.push(composedPair(first, second, this.weights[second.kind] >= this.weights[first.kind] ? second.kind : first.kind));
        }
      }
    }
    for (const pair of composed) this.addPair(pair, pair.steps?.[0]?.preferredFor?.includes(pair.target) === true);
    if (composed.length > 0) this.engines.set(CHAIN_ENGINE, this.chainEngine());
  }

  /**
   * Each step declared `onOption` joins the pair another engine serves for its source and target:
   * that pair offers the step's options beside its own, and runs as a chain with the step (or as
   * the step alone, `instead`) when the conversion sets the option (pairFor). A step with no such
   * pair is not offered.
   */
  private attachOptionalSteps(steps: readonly ConversionPair[]): void {
    for (const { onOption, fallbackOnly: _, ...own } of steps) {
      const served = this.pair(own.source, own.target);
      if (!served || served.engine === own.engine || !onOption) continue;
      const { option, place } = onOption;
      const names = new Set(served.options.map((descriptor) => descriptor.name));
      const options = [...served.options, ...own.options.filter((descriptor) => !names.has(descriptor.name))];
      const servedSteps = served.steps ?? [served];
      const chainSteps = place === 'before' ? [own, ...servedSteps] : [...servedSteps, { ...own, source: 'pdf' }];
      const kinds = chainSteps.map((one) => one.kind);
      const pair: ConversionPair = place === 'instead'
        ? own
        : {
          source: served.source, target: served.target, engine: CHAIN_ENGINE,
          kind: kinds.reduce((heaviest, kind) => (this.weights[kind] > this.weights[heaviest] ? kind : heaviest)),
          options, variants: served.variants, steps: chainSteps,
        };
      this.pairsBySource.get(served.source)!.set(served.target, { ...served, options, withOption: { option, pair } });
      this.kinds.add(own.kind);
      if (place !== 'instead' && !this.engines.has(CHAIN_ENGINE)) this.engines.set(CHAIN_ENGINE, this.chainEngine());
    }
  }

  private chainEngine() {
    return createChainEngine({ engine: (name) => this.engines.get(name), pair: (source, target, options) => this.pairFor(source, target, options) });
  }

  /** Each fallback serves the pair another engine declares for its source and target; alone, none is offered. */
  private attachFallbacks(fallbacks: readonly ConversionPair[]): void {
    for (const fallback of fallbacks) {
      const served = this.pair(fallback.source, fallback.target);
      if (!served || served.engine === fallback.engine) continue;
      this.pairsBySource.get(fallback.source)!.set(fallback.target, { ...served, fallback });
    }
  }

  private addFormat(info: FormatInfo): void {
    if (!this.formatsByKey.has(info.key)) this.formatsByKey.set(info.key, info);
    for (const extension of info.extensions) {
      if (!this.formatsByExtension.has(extension)) this.formatsByExtension.set(extension, info);
    }
  }

  /** `replace`: a chain its first step prefers (ConversionPair.preferredFor) takes a direct pair's place. */
  private addPair(pair: ConversionPair, replace = false): void {
    let targets = this.pairsBySource.get(pair.source);
    if (!targets) this.pairsBySource.set(pair.source, (targets = new Map()));
    // The first engine to declare a pair keeps it: engines are listed in order of preference.
    if (replace || !targets.has(pair.target)) targets.set(pair.target, pair);
    this.kinds.add(pair.kind);
  }

  /** Canonical format key for a name or extension (`jpeg` -> `jpg`, `.TIF` -> `tiff`), or undefined. */
  normalize(name: string): string | undefined {
    const key = name.trim().toLowerCase().replace(/^\./, '');
    return this.formatsByExtension.get(key)?.key ?? (this.formatsByKey.has(key) ? key : undefined);
  }

  sources(): string[] {
    return [...this.pairsBySource.keys()].sort();
  }

  targetsOf(source: string): ConversionPair[] {
    // Code-unit order, not localeCompare: keys are ASCII, and the first localeCompare call
    // initialises ICU collation (~7 ms), a tenth of the CLI's whole start-up budget.
    return [...(this.pairsBySource.get(source)?.values() ?? [])].sort((a, b) => (a.target < b.target ? -1 : a.target > b.target ? 1 : 0));
  }

  pair(source: string, target: string): ConversionPair | undefined {
    return this.pairsBySource.get(source)?.get(target);
  }

  /**
   * The pair a conversion with these options runs: the pair's `withOption` where the conversion
   * sets that option (OCR), else the pair itself. Its kind is what the conversion is charged as.
   */
  pairFor(source: string, target: string, options: Readonly<Record<string, unknown>>): ConversionPair | undefined {
    const pair = this.pair(source, target);
    return pair?.withOption && options[pair.withOption.option] === true ? pair.withOption.pair : pair;
  }

  /** The options, of any pair, whose value names a file sent beside the input (`watermark_image`). */
  fileOptions(): ReadonlySet<string> {
    this.fileOptionNames ??= new Set(this.allPairs().flatMap((pair) => pair.options.filter((option) => option.file === true).map((option) => option.name)));
    return this.fileOptionNames;
  }

  allPairs(): ConversionPair[] {
    return this.sources().flatMap((source) => this.targetsOf(source));
  }

  engine(name: string): Engine | undefined {
    return this.engines.get(name);
  }

  format(key: string): FormatInfo | undefined {
    return this.formatsByKey.get(key);
  }

  /** A chain costs its heaviest step's weight, once; the weights are read each time (SIGHUP changes them). */
  creditWeight(pair: ConversionPair): number {
    if (pair.steps) return Math.max(...pair.steps.map((step) => this.weights[step.kind]));
    return this.weights[pair.kind];
  }

  /** Ends what the engines keep running (the engine host's processes). */
  async close(): Promise<void> {
    await Promise.all(this.all.map((engine) => engine.close?.()));
  }

  /**
   * The lightest weight of any pair offered: the least an upload costs while its pair is not
   * known yet. Read each time: a reload changes the weights in place.
   */
  minCreditWeight(): number {
    let min = Infinity;
    for (const kind of this.kinds) min = Math.min(min, this.weights[kind]);
    return min === Infinity ? 0 : min;
  }
}
