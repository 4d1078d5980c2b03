import { availableParallelism } from 'node:os';
import { DEFAULT_CREDIT_WEIGHTS } from '../src/formats/registry.ts';
import { engineSettingGroups, engineSettingRows, type ConfigRow } from '../src/engines/configuration.ts';
import type { SettingKind } from '../src/engines/descriptor.ts';
import type { ConversionKind } from '../src/engines/pairs.ts';
import { DEFAULT_PLANS, ENGINE_KINDS, PLAN_IDS, type Plan } from '../src/model/plan.ts';
import { defaultServiceConfig } from '../src/service/config.ts';
import {
  addressList, blobUrl, boolean, duration, fraction, httpUrl, integer, listenAddress, oneOf, postgresUrl, text, type Kind,
} from './config-kinds.ts';
import { defaultDataDir } from './config.ts';
import { DEFAULT_BODY_TIMEOUTS } from './http/body-deadline.ts';

/**
 * Every setting of `convd serve`, in one table. A setting's key is its name in the config file
 * (dotted for nested ones: `plans.free.max_upload_mb`); its environment variable is `CONVD_`
 * plus the key in capitals with `.` as `_` (`CONVD_PLANS_FREE_MAX_UPLOAD_MB` is spelled
 * `CONVD_PLAN_FREE_MAX_UPLOAD_MB`, see GROUPS); its flag is `--` plus the key with `-` for `_`.
 * Precedence: flag > environment > config file > default.
 */
export interface Setting<T = unknown> {
  key: string;
  env: string;
  /** e.g. `--port <port>`; undefined for settings set through a group flag or not at all. */
  flag: string | undefined;
  kind: Kind<T>;
  /** The value when nothing sets it; undefined leaves the setting unset. */
  fallback: () => T | undefined;
  help: string;
  /** Masked by `convd config print`. */
  secret: boolean;
  /**
   * Applied by SIGHUP, through its reloader in daemon/reloaders.ts (a row marked so without one
   * stops the start); the others need a restart.
   */
  reloadable: boolean;
  /** A path: relative values in the config file are taken from the file's directory. */
  path: boolean;
}

interface Spec<T> {
  kind: Kind<T>;
  fallback?: () => T | undefined;
  help: string;
  arg?: string;
  flag?: boolean;
  secret?: boolean;
  reloadable?: boolean;
  path?: boolean;
}

function setting<T>(key: string, spec: Spec<T>, env = `CONVD_${key.toUpperCase().replace(/\./g, '_')}`): Setting<T> {
  const isFlag = spec.flag !== false;
  const flagName = `--${key.replace(/_/g, '-')}`;
  return {
    key,
    env,
    flag: isFlag ? (spec.kind === boolean ? flagName : `${flagName} <${spec.arg ?? 'value'}>`) : undefined,
    kind: spec.kind,
    fallback: spec.fallback ?? (() => undefined),
    help: spec.help,
    secret: spec.secret ?? false,
    reloadable: spec.reloadable ?? false,
    path: spec.path ?? false,
  };
}

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export const LOG_FORMATS = ['auto', 'json', 'pretty'] as const;

/** The scalar settings, by key; `ScalarValues` gives each its type. */
export const SCALARS = {
  host: setting('host', { kind: text(), fallback: () => '127.0.0.1', arg: 'host', help: 'address to bind' }),
  port: setting('port', { kind: integer(0, 65535), fallback: () => 7700, arg: 'port', help: 'port to listen on (0 picks a free one)' }),
  data_dir: setting('data_dir', { kind: text(), fallback: () => defaultDataDir({ ...process.env, CONVD_DATA_DIR: undefined }), arg: 'dir', path: true, help: 'data directory: store, inputs, results' }),
  database_url: setting('database_url', { kind: postgresUrl, arg: 'url', secret: true, help: 'keep accounts, keys, settings, conversions and deliveries in PostgreSQL (schema applied at start) instead of the data dir' }),
  blob_url: setting('blob_url', { kind: blobUrl, arg: 'url', help: 'keep inputs and results in an S3-compatible bucket (credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY) instead of the data dir' }),
  quick_lane: setting('quick_lane', { kind: integer(0, 1024), arg: 'n', help: 'places beside the workers for a small conversion of an account with nothing running that used little engine time lately, so that it starts at once however busy the workers are (default: as many as workers; 0: none)' }),
  workers: setting('workers', { kind: integer(0, 1024), fallback: () => availableParallelism(), arg: 'n', help: 'conversions run at once (default: available cores; 0: an API-only node of a cluster)' }),
  no_web: setting('no_web', { kind: boolean, fallback: () => false, help: 'serve no web pages (sign-in, account, conversions, convert and owner pages): an API-only deployment' }),
  no_api: setting('no_api', { kind: boolean, fallback: () => false, help: 'a worker-only node of a cluster: runs conversions, answers /v1 with 503 (health, readiness and metrics stay served); needs database_url and blob_url' }),
  lease_timeout: setting('lease_timeout', { kind: duration('s'), fallback: () => 30_000, arg: 'duration', help: 'with several nodes on one database: how long a node\'s claim on a running conversion lasts without renewal before another node takes it over' }),
  public_url: setting('public_url', { kind: httpUrl, arg: 'url', reloadable: true, secret: true, help: 'public address used in links and Location (default: X-Forwarded-* from a trusted proxy, else the bound address)' }),
  allow_private_urls: setting('allow_private_urls', { kind: boolean, fallback: () => false, help: 'let URL inputs reach private and loopback addresses (trusted internal use only)' }),
  url_allow_networks: setting('url_allow_networks', { kind: addressList, arg: 'addresses', help: 'private addresses/CIDRs that URL inputs and web pages\' resources may reach all the same (an internal file server); cloud metadata stays blocked' }),
  allow_insecure_callbacks: setting('allow_insecure_callbacks', { kind: boolean, fallback: () => false, help: 'allow http and private callback URLs (local webhook testing only)' }),
  trusted_proxy: setting('trusted_proxy', { kind: addressList, arg: 'addresses', reloadable: true, help: 'addresses/CIDRs whose X-Forwarded-For/-Proto/-Host are believed (e.g. 127.0.0.1)' }),
  tls_cert: setting('tls_cert', { kind: text(), arg: 'file', path: true, reloadable: true, help: 'PEM certificate chain: serve https (with --tls-key)' }),
  tls_key: setting('tls_key', { kind: text(), arg: 'file', path: true, reloadable: true, help: 'PEM private key of --tls-cert' }),
  metrics_listen: setting('metrics_listen', { kind: listenAddress, arg: 'host:port', help: 'serve /metrics on this address only (default: on the main port)' }),
  metrics_token: setting('metrics_token', { kind: text(), arg: 'token', secret: true, reloadable: true, help: '/metrics requires Authorization: Bearer <token>' }),
  log_level: setting('log_level', { kind: oneOf(LOG_LEVELS), fallback: () => 'info' as const, arg: 'level', reloadable: true, help: 'debug, info, warn or error' }),
  log_format: setting('log_format', { kind: oneOf(LOG_FORMATS), fallback: () => 'auto' as const, arg: 'format', reloadable: true, help: 'json, pretty, or auto (pretty on a terminal)' }),
  drain_timeout: setting('drain_timeout', { kind: duration('s'), fallback: () => 10_000, arg: 'duration', reloadable: true, help: 'on SIGTERM, how long running conversions may finish before they are re-queued' }),
  retention_days: setting('retention_days', { kind: integer(1, 36_500), fallback: () => defaultServiceConfig().retentionDays, arg: 'days', reloadable: true, help: 'ended conversions are pruned from the store after this many days' }),
  sweep_interval: setting('sweep_interval', { kind: duration('s', 1000), fallback: () => defaultServiceConfig().sweepIntervalMs, arg: 'duration', help: 'how often expired results are deleted' }),
  auth_failures_per_minute: setting('auth_failures_per_minute', { kind: integer(0), fallback: () => 60, arg: 'n', reloadable: true, help: 'failed authentications allowed per client address and minute; past them 429 before any key lookup (0: no limit)' }),
  disk_floor_mb: setting('disk_floor_mb', { kind: integer(0), fallback: () => 256, arg: 'MiB', reloadable: true, help: 'below this much free space on the data dir, submissions get 503 and uploads are cut (0: off)' }),
  upload_idle_timeout: setting('upload_idle_timeout', { kind: duration('s', 100), fallback: () => DEFAULT_BODY_TIMEOUTS.idleMs, arg: 'duration', reloadable: true, help: 'a request body that sends nothing for this long is ended with 408' }),
  request_timeout: setting('request_timeout', { kind: duration('s', 1000), fallback: () => DEFAULT_BODY_TIMEOUTS.totalMs, arg: 'duration', reloadable: true, help: 'a request body not complete after this long is ended with 408' }),
  // An idle engine host takes 60-150 MiB itself (node, sharp): less would fail every conversion.
  max_input_pixels: setting('max_input_pixels', { kind: integer(1_000_000, 10_000_000_000), fallback: () => defaultServiceConfig().maxInputPixels, arg: 'n', help: 'largest image (width x height) an engine decodes, a guard against decompression bombs; a larger one fails input_invalid saying its size and this limit' }),
  engine_memory_mb: setting('engine_memory_mb', { kind: integer(256, 1_048_576), fallback: () => defaultServiceConfig().engineMemoryMb, arg: 'MiB', help: 'memory of one engine host process (data, Markdown and PDF conversions run there), and the address space of an image decoder process (HEVC HEIC, BMP/ICO/Netpbm, Ghostscript); past it the conversion fails memory_limit' }),
  output_cap_ratio: setting('output_cap_ratio', { kind: integer(0, 1_000_000), fallback: () => defaultServiceConfig().outputCapRatio, arg: 'n', reloadable: true, help: 'a result may be at most n times its input (at least --output-cap-floor-mb, at most the plan\'s max_output_mb; 0: only the plan\'s cap)' }),
  output_cap_floor_mb: setting('output_cap_floor_mb', { kind: integer(1), fallback: () => defaultServiceConfig().outputCapFloorMb, arg: 'MiB', reloadable: true, help: 'the output cap by the input is never below this' }),
  // A test setting: shrinks the 1.5 h webhook retry schedule (e.g. 0.001) instead of sleeping through it.
  webhook_schedule_scale: setting('webhook_schedule_scale', { kind: fraction(0, 1), fallback: () => 1, flag: false, help: 'test setting: multiplies webhook retry waits' }),
};

export type ScalarKey = keyof typeof SCALARS;
export type ScalarValues = { [K in ScalarKey]: (typeof SCALARS)[K] extends Setting<infer T> ? T : never };

/** The kind that parses and checks what an engine's row declares. */
function kindOf(kind: SettingKind): Kind<unknown> {
  switch (kind.type) {
    case 'integer': return integer(kind.min, kind.max);
    case 'duration': return duration(kind.unit, kind.min);
    case 'boolean': return boolean;
    case 'choice': return oneOf(kind.values);
  }
}

/** An engine's row as a setting; not reloadable: the engines are made with their settings once. */
const engineSetting = (row: ConfigRow): Setting => setting(row.key, { kind: kindOf(row.kind), fallback: row.fallback, arg: row.arg, help: row.help });

/**
 * The scalar settings in the order `convd config print` and `convd serve --help` list them: the
 * engines' own rows (each engine's descriptor.ts) stand before max_input_pixels, where they
 * always stood.
 */
export const SCALAR_SETTINGS: Setting[] = (() => {
  const own = Object.values(SCALARS) as Setting[];
  const at = own.indexOf(SCALARS.max_input_pixels as Setting);
  return [...own.slice(0, at), ...engineSettingRows().map(engineSetting), ...own.slice(at)];
})();

/**
 * Nested settings have one leaf per field, set in the file as objects, in the environment one
 * variable per leaf, and on the command line through one repeatable flag per group.
 */
export interface Group {
  /** File key of the object, e.g. `plans`. */
  prefix: string;
  /** Repeatable flag whose value is `<leaf>=<value>`. */
  flag: string;
  /** Environment prefix; a leaf's variable is this plus the leaf in capitals (`.` -> `_`). */
  envPrefix: string;
  help: string;
}

const PLANS_GROUP: Group = { prefix: 'plans', flag: '--plan <plan.field=value>', envPrefix: 'CONVD_PLAN_', help: 'a plan limit, e.g. free.max_upload_mb=200 (repeatable)' };
const WEIGHTS_GROUP: Group = { prefix: 'credit_weights', flag: '--credit-weight <kind=n>', envPrefix: 'CONVD_CREDIT_WEIGHT_', help: 'credits per conversion kind, e.g. video=8 (repeatable)' };
const TIMEOUTS_GROUP: Group = { prefix: 'engine_timeout_ms', flag: '--engine-timeout-ms <engine=ms>', envPrefix: 'CONVD_ENGINE_TIMEOUT_MS_', help: 'engine time limit, e.g. media=600000 or media=10m (repeatable)' };

/** The engines' groups (the data engine's `input_cap_mb`), each with its leaves. */
const ENGINE_GROUPS = engineSettingGroups().map((group) => ({
  group: {
    prefix: group.prefix, flag: `--${group.prefix.replace(/_/g, '-')} <${group.arg}>`, envPrefix: `CONVD_${group.prefix.toUpperCase()}_`, help: group.help,
  } satisfies Group,
  rows: group.rows,
}));

export const GROUPS: Group[] = [PLANS_GROUP, WEIGHTS_GROUP, TIMEOUTS_GROUP, ...ENGINE_GROUPS.map(({ group }) => group)];

/** The plan's own numbers and words; its time limits are leaves of their own (`free.time_limits.office`). */
type PlanField = Exclude<keyof Plan, 'id' | 'time_limits'>;
const PLAN_FIELDS: Record<PlanField, Kind<string | number>> = {
  name: text(),
  credits_type: oneOf(['plan_credits', 'free_api_credits', 'unmetered']),
  monthly_allowance: integer(0),
  max_upload_mb: integer(1),
  conversions_per_window: integer(1),
  window_seconds: integer(1),
  concurrent_conversions: integer(1),
  requests_per_minute: integer(1),
  result_ttl_hours: integer(1),
  max_output_mb: integer(1),
  max_inputs: integer(1, 50),
  max_pages: integer(1, 1_000_000),
  max_ocr_pages: integer(1, 1_000_000),
  engine_seconds_per_hour: integer(0),
};

function leaf<T>(group: Group, name: string, kind: Kind<T>, fallback: () => T, help: string): Setting<T> {
  return setting(`${group.prefix}.${name}`, { kind, fallback, flag: false, reloadable: true, help }, `${group.envPrefix}${name.toUpperCase().replace(/\./g, '_')}`);
}

export const PLAN_SETTINGS: Setting<string | number>[] = PLAN_IDS.flatMap((plan) => [
  ...(Object.keys(PLAN_FIELDS) as PlanField[]).map((field) =>
    leaf(PLANS_GROUP, `${plan}.${field}`, PLAN_FIELDS[field], () => DEFAULT_PLANS[plan][field], `${plan} plan: ${field}`),
  ),
  ...ENGINE_KINDS.map((engine) =>
    leaf(PLANS_GROUP, `${plan}.time_limits.${engine}`, integer(1, 2_000_000), () => DEFAULT_PLANS[plan].time_limits[engine], `${plan} plan: time limit of a ${engine} conversion, in seconds (engine_timeout_ms.${engine} is the ceiling)`),
  ),
]);

export const WEIGHT_SETTINGS: Setting<number>[] = (Object.keys(DEFAULT_CREDIT_WEIGHTS) as ConversionKind[]).map((kind) =>
  leaf(WEIGHTS_GROUP, kind, integer(0), () => DEFAULT_CREDIT_WEIGHTS[kind], `credits per ${kind} conversion up to 100 MB`),
);

export const TIMEOUT_SETTINGS: Setting<number>[] = Object.entries(defaultServiceConfig().engineTimeoutMs).map(([engine, ms]) =>
  leaf(TIMEOUTS_GROUP, engine, duration('ms', 1), () => ms, `time limit of the ${engine} engine, in ms`),
);

export const ENGINE_GROUP_SETTINGS: Setting[] = ENGINE_GROUPS.flatMap(({ group, rows }) => rows.map((row) => ({
  ...leaf(group, row.key, kindOf(row.kind), row.fallback, row.help),
  // The engines are made with these once (the engine host gets them with every job): a restart.
  reloadable: false,
})));

export const ALL_SETTINGS: Setting[] = [...SCALAR_SETTINGS, ...PLAN_SETTINGS, ...WEIGHT_SETTINGS, ...TIMEOUT_SETTINGS, ...ENGINE_GROUP_SETTINGS] as Setting[];
export const SETTINGS_BY_KEY = new Map(ALL_SETTINGS.map((s) => [s.key, s]));
export const SETTINGS_BY_ENV = new Map(ALL_SETTINGS.map((s) => [s.env, s]));
