import { accessSync, constants, readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { createSecureContext } from 'node:tls';
import { parse as parseJsonc, printParseErrorCode, type ParseError } from 'jsonc-parser';
import type { CreditWeights } from '../src/formats/registry.ts';
import { PLAN_IDS, type Plan, type PlanId } from '../src/model/plan.ts';
import { boolean, ValueError } from './config-kinds.ts';
import { engineVariables, settingsFromValues } from '../src/engines/configuration.ts';
import { ALL_SETTINGS, GROUPS, SCALAR_SETTINGS, SETTINGS_BY_ENV, SETTINGS_BY_KEY, type ScalarKey, type ScalarValues, type Setting } from './config-settings.ts';
import type { DaemonConfig } from './config.ts';

export type Source = 'flag' | 'env' | 'file' | 'default';

export interface LoadedConfig {
  config: DaemonConfig;
  /** Every setting's effective value and where it came from, by key (unset ones are absent). */
  values: Map<string, { value: unknown; source: Source }>;
  /** Things worth a log line that do not stop the start (e.g. an unknown CONVD_ variable). */
  warnings: string[];
}

/** One or more invalid values; the message names each (setting, where it was set, what it must be). */
export class ConfigError extends Error {
  readonly exitCode = 2;
  constructor(readonly problems: string[]) {
    super(problems.length === 1 ? problems[0]! : `${problems.length} problems:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
  }
}

export interface ConfigInput {
  /** Options as commander parsed them (camelCase names; group flags are arrays of `leaf=value`). */
  flags: Record<string, unknown>;
  env: NodeJS.ProcessEnv;
  cwd?: string;
}

/** CONVD_ variables that are no setting of the daemon but read by an engine where it finds its binary. */
const ENGINE_VARIABLES = engineVariables();

const camel = (key: string) => key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
const flagAttribute = (flag: string) => camel(flag.replace(/^--/, '').split(' ')[0]!.replace(/-/g, '_'));

/** The config file named by `--config` or `CONVD_CONFIG`, absolute; null when none is. */
export function configFilePath(input: ConfigInput): string | null {
  const named = input.flags.config ?? input.env.CONVD_CONFIG;
  return typeof named === 'string' && named !== '' ? resolve(input.cwd ?? process.cwd(), named) : null;
}

/** Reads the config file into `{key: value}` leaves (nested objects flattened to dotted keys). */
function readConfigFile(path: string, problems: string[]): Map<string, unknown> {
  const leaves = new Map<string, unknown>();
  let textContent: string;
  try {
    textContent = readFileSync(path, 'utf8');
  } catch (error) {
    problems.push(`config file ${path}: cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
    return leaves;
  }
  // JSON with comments allowed: an operator's file often says why a limit is what it is.
  const errors: ParseError[] = [];
  const data: unknown = parseJsonc(textContent, errors, { allowTrailingComma: true, disallowComments: false });
  if (errors.length > 0) {
    const first = errors[0]!;
    const before = textContent.slice(0, first.offset);
    const line = before.split('\n').length;
    const column = first.offset - before.lastIndexOf('\n');
    problems.push(`config file ${path}:${line}:${column}: invalid JSON (${printParseErrorCode(first.error)})`);
    return leaves;
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    problems.push(`config file ${path}: must hold one JSON object of settings`);
    return leaves;
  }
  const walk = (object: Record<string, unknown>, prefix: string) => {
    for (const [name, value] of Object.entries(object)) {
      const key = prefix === '' ? name : `${prefix}.${name}`;
      if (SETTINGS_BY_KEY.has(key)) leaves.set(key, value);
      else if (isGroupPath(key) && typeof value === 'object' && value !== null && !Array.isArray(value)) walk(value as Record<string, unknown>, key);
      else problems.push(`config file ${path}: unknown setting "${key}"${suggestion(key)}`);
    }
  };
  walk(data as Record<string, unknown>, '');
  return leaves;
}

/** `plans`, `plans.free`, `credit_weights`, ...: the objects that hold leaves. */
function isGroupPath(key: string): boolean {
  return ALL_SETTINGS.some((s) => s.key.startsWith(`${key}.`));
}

/** The leaf names of a group: `free.max_upload_mb`, ... for `plans`. */
function groupLeaves(group: (typeof GROUPS)[number]): string[] {
  return ALL_SETTINGS.filter((s) => s.key.startsWith(`${group.prefix}.`)).map((s) => s.key.slice(group.prefix.length + 1));
}

/** What the left side of a group flag (or the tail of its variable) may be, briefly. */
function groupHint(group: (typeof GROUPS)[number], spell: (name: string) => string = (name) => name): string {
  const leaves = groupLeaves(group);
  if (group.prefix !== 'plans') return `one of ${leaves.map(spell).join(', ')}`;
  const plans = [...new Set(leaves.map((leaf) => leaf.split('.')[0]!))];
  const fields = [...new Set(leaves.map((leaf) => leaf.split('.')[1]!))];
  return `${spell('<plan>.<field>')} with plan one of ${plans.map(spell).join(', ')} and field one of ${fields.map(spell).join(', ')}`;
}

function suggestion(key: string): string {
  const last = key.split('.').pop()!;
  const near = ALL_SETTINGS.find((s) => s.key.split('.').pop() === last.replace(/-/g, '_') || s.key === key.replace(/-/g, '_'));
  return near ? ` (did you mean "${near.key}"?)` : '';
}

function parseValue(setting: Setting, raw: unknown, where: string, problems: string[]): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: setting.kind.parse(raw) };
  } catch (error) {
    if (!(error instanceof ValueError)) throw error;
    problems.push(`${where} ${error.message}`);
    return { ok: false };
  }
}

/**
 * Merges the sources, flag > environment > config file > default, and checks every value.
 * Throws ConfigError naming each invalid value; never starts anything.
 */
export function loadConfig(input: ConfigInput): LoadedConfig {
  const cwd = input.cwd ?? process.cwd();
  const problems: string[] = [];
  const warnings: string[] = [];
  const layers: Record<Exclude<Source, 'default'>, Map<string, unknown>> = { flag: new Map(), env: new Map(), file: new Map() };

  const configFile = configFilePath(input);
  if (configFile) {
    for (const [key, raw] of readConfigFile(configFile, problems)) {
      const setting = SETTINGS_BY_KEY.get(key)!;
      const parsed = parseValue(setting, raw, `config file ${configFile}: ${key}`, problems);
      if (!parsed.ok) continue;
      const value = setting.path && typeof parsed.value === 'string' && !isAbsolute(parsed.value) ? resolve(dirname(configFile), parsed.value) : parsed.value;
      layers.file.set(key, value);
    }
  }

  for (const [name, raw] of Object.entries(input.env)) {
    if (!name.startsWith('CONVD_') || raw === undefined || raw === '' || name === 'CONVD_CONFIG' || ENGINE_VARIABLES.has(name)) continue;
    const setting = SETTINGS_BY_ENV.get(name);
    if (!setting) {
      const group = GROUPS.find((g) => name.startsWith(g.envPrefix));
      if (group) problems.push(`${name}: no such setting; ${group.envPrefix}* takes ${groupHint(group, (l) => l.toUpperCase().replace(/\./g, '_'))}`);
      else warnings.push(`${name} is not a convd setting and is ignored`);
      continue;
    }
    const parsed = parseValue(setting, raw, name, problems);
    if (parsed.ok) layers.env.set(setting.key, setting.path ? resolve(cwd, parsed.value as string) : parsed.value);
  }

  for (const setting of SCALAR_SETTINGS) {
    if (!setting.flag) continue;
    // Commander reads `--no-x` as the negation of an `x` that defaults to true: given, x is false.
    const negated = setting.kind === boolean && setting.key.startsWith('no_') ? input.flags[camel(setting.key.slice(3))] : undefined;
    const raw = negated === false ? true : input.flags[camel(setting.key)];
    if (raw === undefined) continue;
    const parsed = parseValue(setting, raw, setting.flag.split(' ')[0]!, problems);
    if (parsed.ok) layers.flag.set(setting.key, setting.path ? resolve(cwd, parsed.value as string) : parsed.value);
  }
  for (const group of GROUPS) {
    const flag = group.flag.split(' ')[0]!;
    const given = input.flags[flagAttribute(group.flag)];
    for (const item of Array.isArray(given) ? (given as unknown[]) : []) {
      const match = typeof item === 'string' ? /^([^=]+)=(.*)$/.exec(item) : null;
      const setting = match ? SETTINGS_BY_KEY.get(`${group.prefix}.${match[1]!.trim()}`) : undefined;
      if (!match || !setting) {
        problems.push(`${flag} ${JSON.stringify(item)}: expected ${group.flag.split(' ')[1]!.replace(/[<>]/g, '')}, the left side ${groupHint(group)}`);
        continue;
      }
      const parsed = parseValue(setting, match[2], `${flag} ${match[1]!.trim()}`, problems);
      if (parsed.ok) layers.flag.set(setting.key, parsed.value);
    }
  }

  const values = new Map<string, { value: unknown; source: Source }>();
  for (const setting of ALL_SETTINGS) {
    for (const source of ['flag', 'env', 'file'] as const) {
      if (layers[source].has(setting.key)) {
        values.set(setting.key, { value: layers[source].get(setting.key), source });
        break;
      }
    }
    if (!values.has(setting.key)) {
      const fallback = setting.fallback();
      if (fallback !== undefined) values.set(setting.key, { value: fallback, source: 'default' });
    }
  }

  const where = (key: string) => {
    const entry = values.get(key);
    const setting = SETTINGS_BY_KEY.get(key)!;
    return entry?.source === 'flag' ? setting.flag!.split(' ')[0]! : entry?.source === 'env' ? setting.env : `config file ${configFile}: ${key}`;
  };
  const hasCert = values.has('tls_cert');
  if (hasCert !== values.has('tls_key')) problems.push(`${hasCert ? where('tls_cert') : where('tls_key')}: TLS needs both tls_cert and tls_key`);
  if (values.get('workers')?.value === 0 && !(values.has('database_url') && values.has('blob_url'))) {
    problems.push(`${where('workers')}: 0 workers is an API-only node of a cluster: it needs database_url and blob_url (other nodes run the conversions)`);
  }
  if (values.get('no_api')?.value === true) {
    if (!(values.has('database_url') && values.has('blob_url'))) {
      problems.push(`${where('no_api')}: a node without the API is a worker of a cluster: it needs database_url and blob_url (other nodes take the requests)`);
    }
    if (values.get('workers')?.value === 0) problems.push(`${where('no_api')} with ${where('workers')} 0: a node with neither the API nor workers would do nothing`);
  }
  let readable = hasCert;
  for (const key of ['tls_cert', 'tls_key']) {
    const path = values.get(key)?.value;
    if (typeof path !== 'string') continue;
    try {
      accessSync(path, constants.R_OK);
    } catch (error) {
      readable = false;
      problems.push(`${where(key)}: ${path} cannot be read (${(error as NodeJS.ErrnoException).code})`);
    }
  }
  if (readable && values.has('tls_key')) {
    // Here, not when the server starts: a file that is no PEM certificate (or a key that is not
    // its key) is a configuration error, named as one.
    try {
      createSecureContext({ cert: readFileSync(values.get('tls_cert')!.value as string), key: readFileSync(values.get('tls_key')!.value as string) });
    } catch (error) {
      problems.push(`${where('tls_cert')} and ${where('tls_key')}: not a usable PEM certificate and private key (${error instanceof Error ? error.message : String(error)})`);
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return { config: assemble(values, configFile), values, warnings };
}

function assemble(values: Map<string, { value: unknown }>, configFile: string | null): DaemonConfig {
  const get = <K extends ScalarKey>(key: K) => values.get(key)?.value as ScalarValues[K] | undefined;
  const leaves = (prefix: string) => {
    const out: Record<string, unknown> = {};
    for (const [key, entry] of values) if (key.startsWith(`${prefix}.`)) out[key.slice(prefix.length + 1)] = entry.value;
    return out;
  };
  const planLeaves = leaves('plans');
  const plans = {} as Record<PlanId, Plan>;
  for (const id of PLAN_IDS) {
    const plan: Record<string, unknown> = { id };
    const timeLimits: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(planLeaves)) {
      if (!key.startsWith(`${id}.`)) continue;
      const field = key.slice(id.length + 1);
      if (field.startsWith('time_limits.')) timeLimits[field.slice('time_limits.'.length)] = value;
      else plan[field] = value;
    }
    plan.time_limits = timeLimits;
    // Every field has a default and was checked by its kind: the record is a whole Plan.
    plans[id] = plan as unknown as Plan;
  }
  const cert = get('tls_cert');
  const key = get('tls_key');
  return {
    configFile,
    host: get('host')!,
    port: get('port')!,
    dataDir: get('data_dir')!,
    databaseUrl: get('database_url') ?? null,
    blobUrl: get('blob_url') ?? null,
    workers: get('workers')!,
    quickLane: get('quick_lane') ?? null,
    serveApi: get('no_api') !== true,
    serveWeb: get('no_web') !== true && get('no_api') !== true,
    publicUrl: get('public_url'),
    allowPrivateUrls: get('allow_private_urls')!,
    urlAllowNetworks: get('url_allow_networks') ?? [],
    allowInsecureCallbacks: get('allow_insecure_callbacks')!,
    trustedProxies: get('trusted_proxy') ?? [],
    tls: cert && key ? { cert, key } : null,
    metricsListen: get('metrics_listen') ?? null,
    metricsToken: get('metrics_token'),
    logLevel: get('log_level')!,
    logFormat: get('log_format')!,
    drainTimeoutMs: get('drain_timeout')!,
    leaseTimeoutMs: get('lease_timeout')!,
    authFailuresPerMinute: get('auth_failures_per_minute')!,
    diskFloorMb: get('disk_floor_mb')!,
    uploadIdleTimeoutMs: get('upload_idle_timeout')!,
    requestTimeoutMs: get('request_timeout')!,
    retentionDays: get('retention_days')!,
    sweepIntervalMs: get('sweep_interval')!,
    webhookScheduleScale: get('webhook_schedule_scale')!,
    plans,
    creditWeights: leaves('credit_weights') as unknown as CreditWeights,
    engineTimeoutMs: leaves('engine_timeout_ms') as Record<string, number>,
    engineMemoryMb: get('engine_memory_mb')!,
    maxInputPixels: get('max_input_pixels')!,
    engines: settingsFromValues((key) => values.get(key)?.value),
    outputCapRatio: get('output_cap_ratio')!,
    outputCapFloorMb: get('output_cap_floor_mb')!,
  };
}
