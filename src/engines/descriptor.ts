import type { EngineLoader } from './lazy.ts';
import type { ConversionPair } from './pairs.ts';
import type { EngineOwnSettings, EngineSettings, EngineStatus } from './types.ts';

/*
 * An engine is a module: its folder under engines/ declares it in `descriptor.ts`, and the catalog
 * (catalog.ts) lists the descriptors. What the rest of the service knows of an engine it learns
 * from there: how it loads, the settings `convd serve` reads for it, its time limit, what
 * `convd doctor` says of it, the programs its probe looks for. A descriptor module stays light
 * (no engine code, no library): every process that converts imports all of them.
 */

/** A setting's value as configuration holds it. */
export type SettingValue = number | boolean | string;

/** What values a setting takes; the daemon's configuration parses and checks them (daemon/config-kinds.ts). */
export type SettingKind =
  | { type: 'integer'; min: number; max?: number }
  /** Milliseconds, written `500ms`, `10s`, `2m`; a bare number counts `unit`s. */
  | { type: 'duration'; unit: 's' | 'ms'; min?: number }
  | { type: 'boolean' }
  | { type: 'choice'; values: readonly string[] };

/**
 * One setting of an engine as `convd serve` reads it. Its key is its name in the config file
 * (`office_instances`); its variable (`CONVD_OFFICE_INSTANCES`) and flag (`--office-instances`)
 * follow from it. In a group its key is the leaf (`md` of `input_cap_mb.md`).
 */
export interface EngineSettingRow<S> {
  key: string;
  /** The field of the engine's own settings it sets; its default is that field's in `defaults()`. */
  field: keyof S & string;
  kind: SettingKind;
  /** The field counts in units this many times smaller than the setting's (bytes of a MiB); 1 when unset. */
  scale?: number;
  /** The flag's argument, e.g. `n` for `--office-instances <n>`; a boolean takes none. */
  arg?: string;
  help: string;
  /**
   * Where `convd config print` and `convd serve --help` list it among the engines' rows, ascending;
   * rows without come after them, in the catalog's order. The numbers keep the rows that were
   * listed before engines had descriptors in their places; a new row needs none.
   */
  listedAt?: number;
}

/** Settings set through one repeatable flag, `--<prefix> <leaf>=<value>` (`--input-cap-mb yaml=8`). */
export interface EngineSettingGroup<S> {
  /** The key of the group in the config file (`input_cap_mb`); the flag and variables follow from it. */
  prefix: string;
  /** The flag's argument, e.g. `format=MiB`. */
  arg: string;
  help: string;
  rows: readonly EngineSettingRow<S>[];
}

/** What `convd doctor` says of an engine beyond its status line. */
export interface EngineDoctor<F> {
  /** The finding's key in `convd doctor --json`. */
  key: string;
  /** Looks at what the probes found; undefined when there is nothing to say (the engine does not run here). */
  find(statuses: readonly EngineStatus[], pairs: readonly ConversionPair[]): Promise<F | undefined>;
  /** The line `convd doctor` prints of the finding. */
  line(finding: F): string;
}

/** A program an engine's probe looks for: the probe findings cache is valid for one of each (findings-cache.ts). */
export interface EngineBinary {
  /** Its name on PATH. */
  name: string;
  /** The variable that names its path. */
  env: string;
  /** The npm package that ships it, when one does. */
  npm?: string;
}

export interface EngineDescriptor<S extends object = EngineOwnSettings, F = unknown> {
  /** `Engine.name`: the key of its settings, of its time limit (`engine_timeout_ms.<name>`) and of its pairs. */
  name: string;
  /** Its own settings where nothing configures them: the daemon's defaults, and the in-process CLI's. */
  defaults?(): S;
  /** The rows of `convd serve`'s configuration that set them, one flag each. */
  settings?: readonly EngineSettingRow<S>[];
  /** Rows set through one repeatable flag instead. */
  group?: EngineSettingGroup<S>;
  /** Its settings when `conv` converts in-process, on the user's own machine, `workers` at a time. */
  inProcess?(own: S, workers: number): S;
  /** Probed at every start whatever earlier findings say: the probe starts what it keeps warm. */
  probeAtStart?(own: S): boolean;
  limits: {
    /** The default of `engine_timeout_ms.<name>`: no conversion on it runs longer, whatever its plan. */
    timeLimitMs: number;
    /** Where `convd config print` lists `engine_timeout_ms.<name>`, as a row's `listedAt`. */
    listedAt?: number;
  };
  /**
   * How it is made, without importing its module first (lazy.ts). `own` is unset where nothing
   * configured the engine (a test's catalog): it runs with its built-in defaults then.
   */
  loader(settings: EngineSettings, own: S | undefined): Omit<EngineLoader, 'name'>;
  doctor?: EngineDoctor<F>;
  binaries?: readonly EngineBinary[];
  /**
   * Folders whose contents its probe reads (the languages Tesseract has data for): the probe
   * findings cache is valid for one state of each (a language installed changes the folder).
   */
  dataDirs?(env: NodeJS.ProcessEnv): string[];
  /** Other `CONVD_` variables it reads (where its helpers are): no settings of the daemon, which leaves them alone. */
  variables?: readonly string[];
}

/**
 * An engine's descriptor, checked against its own settings' type, as the catalog holds it. The
 * catalog and the configuration handle every engine's settings as plain records built from that
 * engine's own `defaults()` and rows, so the type each engine names for them is given up here.
 */
export function defineEngine<S extends object = Record<never, never>, F = never>(descriptor: EngineDescriptor<S, F>): EngineDescriptor {
  return descriptor as unknown as EngineDescriptor;
}
