import { ENGINES } from './catalog.ts';
import type { EngineBinary, EngineDescriptor, EngineSettingRow, SettingKind, SettingValue } from './descriptor.ts';
import type { EngineOwnSettings, EngineSettings, SettingsByEngine } from './types.ts';

/*
 * The engines' configuration, read from their descriptors: what the service and the daemon know
 * of engines' settings and limits without naming one engine.
 */

/** Every engine's own settings at their defaults. */
export function defaultSettingsByEngine(): SettingsByEngine {
  const settings: SettingsByEngine = {};
  for (const engine of ENGINES) if (engine.defaults) settings[engine.name] = engine.defaults();
  return settings;
}

/** Ascending by `listedAt`, those without after the others, each kept in catalog order (the sort is stable). */
const byListing = <T extends { listedAt?: number }>(items: T[]): T[] =>
  items.sort((a, b) => (a.listedAt ?? Number.POSITIVE_INFINITY) - (b.listedAt ?? Number.POSITIVE_INFINITY));

/** engine_timeout_ms's default for every engine, in ms, by name, in the order `convd config print` lists them. */
export function defaultTimeLimits(): Record<string, number> {
  const engines = byListing(ENGINES.map((engine) => ({ name: engine.name, ms: engine.limits.timeLimitMs, listedAt: engine.limits.listedAt })));
  return Object.fromEntries(engines.map((engine) => [engine.name, engine.ms]));
}

/** One engine setting as `convd serve` reads it. */
export interface ConfigRow {
  /** The key in the config file: the row's own, or in a group the leaf's (`md`). */
  key: string;
  kind: SettingKind;
  arg?: string;
  help: string;
  /** The default, in the setting's units (MiB, not bytes). */
  fallback: () => SettingValue;
  listedAt?: number;
}

/** Settings set through one repeatable flag (`--input-cap-mb <format=MiB>`), as `convd serve` reads them. */
export interface ConfigGroup {
  prefix: string;
  arg: string;
  help: string;
  rows: ConfigRow[];
}

function configRow(engine: EngineDescriptor, row: EngineSettingRow<EngineOwnSettings>): ConfigRow {
  const defaults = engine.defaults;
  if (!defaults) throw new Error(`engine "${engine.name}" has setting "${row.key}" but no defaults`);
  const scale = row.scale ?? 1;
  return {
    key: row.key, kind: row.kind, arg: row.arg, help: row.help, listedAt: row.listedAt,
    fallback: () => {
      const value = defaults()[row.field] as SettingValue;
      return typeof value === 'number' ? value / scale : value;
    },
  };
}

/** The engines' own rows, each a flag of `convd serve`, in the order they are listed. */
export function engineSettingRows(): ConfigRow[] {
  return byListing(ENGINES.flatMap((engine) => (engine.settings ?? []).map((row) => configRow(engine, row))));
}

/** The engines' groups of rows, in catalog order. */
export function engineSettingGroups(): ConfigGroup[] {
  return ENGINES.flatMap((engine) => (engine.group ? [{ ...engine.group, rows: engine.group.rows.map((row) => configRow(engine, row)) }] : []));
}

/**
 * Each engine's own settings from configured values: `read` gives a row's value by its key in
 * the config file (`office_instances`, `input_cap_mb.md`), undefined where unset (the default stays).
 */
export function settingsFromValues(read: (key: string) => unknown): SettingsByEngine {
  const settings = defaultSettingsByEngine();
  for (const engine of ENGINES) {
    const own = settings[engine.name];
    if (!own) continue;
    const rows = [
      ...(engine.settings ?? []).map((row) => ({ row, key: row.key })),
      ...(engine.group?.rows ?? []).map((row) => ({ row, key: `${engine.group!.prefix}.${row.key}` })),
    ];
    for (const { row, key } of rows) {
      const value = read(key);
      if (value !== undefined) own[row.field] = typeof value === 'number' ? value * (row.scale ?? 1) : value;
    }
  }
  return settings;
}

/** What `engineSettings` reads: ServiceConfig has these fields. */
export interface EngineConfiguration {
  maxInputPixels: number;
  /** engine_memory_mb: the memory of an engine process that is not pooled, MiB. */
  engineMemoryMb: number;
  allowPrivateUrls: boolean;
  urlAllowNetworks: readonly string[];
  /** Each engine's own settings, by name. */
  engines: SettingsByEngine;
}

export interface EngineRuns {
  /** Runs beyond each engine's own for the workers' quick lane (EngineSettings.quickRuns). */
  quickRuns?: number;
  /** `conv` converting in-process with this many workers: each engine's `inProcess` settings. */
  inProcessWorkers?: number;
}

/** What the engines are made with, from the configuration: the daemon's, the in-process CLI's and `convd doctor`'s alike. */
export function engineSettings(config: EngineConfiguration, runs: EngineRuns = {}): EngineSettings {
  const engines: SettingsByEngine = {};
  for (const [name, own] of Object.entries(config.engines)) {
    const inProcess = ENGINES.find((engine) => engine.name === name)?.inProcess;
    engines[name] = inProcess && runs.inProcessWorkers !== undefined ? inProcess(own, runs.inProcessWorkers) : own;
  }
  return {
    maxInputPixels: config.maxInputPixels,
    processMemoryMb: config.engineMemoryMb,
    allowPrivateUrls: config.allowPrivateUrls,
    allowedNetworks: config.urlAllowNetworks,
    engines,
    ...(runs.quickRuns !== undefined ? { quickRuns: runs.quickRuns } : {}),
  };
}

/** The engines to probe at every start whatever earlier findings say (their probe starts what they keep warm). */
export function probedAtStart(settings: EngineSettings): string[] {
  return ENGINES.filter((engine) => {
    const own = settings.engines?.[engine.name];
    return own !== undefined && engine.probeAtStart?.(own) === true;
  }).map((engine) => engine.name);
}

/** The programs the engines' probes look for. */
export function engineBinaries(): EngineBinary[] {
  return ENGINES.flatMap((engine) => engine.binaries ?? []);
}

/** Folders whose contents the engines' probes read (Tesseract's languages): a change there is a new probe. */
export function engineDataDirs(env: NodeJS.ProcessEnv): string[] {
  return ENGINES.flatMap((engine) => engine.dataDirs?.(env) ?? []);
}

/** The variables the engines read where they find their programs: names of the engines', not settings of the daemon. */
export function engineVariables(): Set<string> {
  return new Set(ENGINES.flatMap((engine) => [...(engine.binaries ?? []).map((binary) => binary.env), ...(engine.variables ?? [])]));
}
