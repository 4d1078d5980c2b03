import { chmodSync, mkdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { EXIT } from './exit-codes.ts';
import { CliError } from './errors.ts';

/**
 * Named profiles (`base-url`, `api-key`) in `$XDG_CONFIG_HOME/conv/config.json`
 * (`~/.config/conv/config.json`), written through conf with mode 0600 in a 0700 directory: the
 * file holds API keys. Reads go straight to the JSON file: conf (with its schema validator) costs
 * ~50 ms to load, more than Node's own start-up, and every command reads the profile while only
 * `conv config set|use` writes it.
 */

export const PROFILE_KEYS = ['base-url', 'api-key'] as const;
export type ProfileKey = (typeof PROFILE_KEYS)[number];
export type ProfileValues = Partial<Record<ProfileKey, string>>;

export interface ProfileFile {
  current?: string;
  profiles?: Record<string, ProfileValues>;
}

export const DEFAULT_PROFILE = 'default';

export function isProfileKey(value: string): value is ProfileKey {
  return (PROFILE_KEYS as readonly string[]).includes(value);
}

export function configDir(env: NodeJS.ProcessEnv): string {
  const xdg = env.XDG_CONFIG_HOME;
  // XDG: a relative path is invalid and must be ignored.
  const base = xdg && xdg.startsWith('/') ? xdg : join(env.HOME || homedir(), '.config');
  return join(base, 'conv');
}

export function configPath(env: NodeJS.ProcessEnv): string {
  return join(configDir(env), 'config.json');
}

function badFile(path: string, reason: string): CliError {
  return new CliError(EXIT.error, 'config_invalid', `${path}: ${reason}`, 'fix or remove the file, then run `conv config set` again');
}

/** The profile file as stored; empty when there is none yet. */
export function readProfileFile(env: NodeJS.ProcessEnv): ProfileFile {
  const path = configPath(env);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw badFile(path, (error as Error).message);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw badFile(path, 'not valid JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw badFile(path, 'not a JSON object');
  return parsed as ProfileFile;
}

/** The profile in effect: `--profile`, else `CONV_PROFILE`, else the one `conv config use` chose. */
export function activeProfileName(flag: string | undefined, env: NodeJS.ProcessEnv, file: ProfileFile): string {
  return flag || env.CONV_PROFILE || file.current || DEFAULT_PROFILE;
}

const PROFILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export function checkProfileName(name: string): void {
  if (!PROFILE_NAME.test(name)) {
    throw new CliError(EXIT.usage, 'usage', `invalid profile name "${name}": use letters, digits, ".", "_" and "-" (at most 64)`);
  }
}

/** The writable store, on conf. Loaded only by `conv config`. */
export interface ProfileStore {
  readonly path: string;
  read(): ProfileFile;
  set(profile: string, key: ProfileKey, value: string): void;
  unset(profile: string, key: ProfileKey): void;
  use(profile: string): void;
}

const SCHEMA = {
  current: { type: 'string' },
  profiles: {
    type: 'object',
    additionalProperties: {
      type: 'object',
      properties: { 'base-url': { type: 'string' }, 'api-key': { type: 'string' } },
      additionalProperties: false,
    },
  },
} as const;

export async function openProfileStore(env: NodeJS.ProcessEnv): Promise<ProfileStore> {
  const dir = configDir(env);
  // conf would create the directory world-readable; the key file's directory is the user's only.
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const { default: Conf } = await import('conf');
  let conf: InstanceType<typeof Conf<ProfileFile>>;
  try {
    conf = new Conf<ProfileFile>({
      cwd: dir,
      configName: 'config',
      configFileMode: 0o600,
      // Profile names may contain dots.
      accessPropertiesByDotNotation: false,
      schema: SCHEMA,
    });
  } catch (error) {
    throw badFile(join(dir, 'config.json'), (error as Error).message);
  }
  const path = conf.path;
  const write = (file: ProfileFile) => {
    conf.store = file;
    // A file written by an older version (or by hand) keeps its mode across conf's rename.
    chmodSync(path, 0o600);
  };
  return {
    path,
    read: () => structuredClone(conf.store),
    set(profile, key, value) {
      const file = structuredClone(conf.store);
      const profiles = file.profiles ?? {};
      profiles[profile] = { ...profiles[profile], [key]: value };
      write({ ...file, profiles });
    },
    unset(profile, key) {
      const file = structuredClone(conf.store);
      const values = file.profiles?.[profile];
      if (!values || !(key in values)) return;
      delete values[key];
      write(file);
    },
    use(profile) {
      write({ ...structuredClone(conf.store), current: profile });
    },
  };
}

/** An API key as shown in listings: enough to tell keys apart, not enough to use one. */
export function maskKey(key: string): string {
  if (key.length <= 12) return '****';
  return `${key.slice(0, 8)}…${key.slice(-4)}`;
}
