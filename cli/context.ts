import type { ConvClient } from '../src/client/types.ts';
import { addCleanup } from './cleanup.ts';
import { CliError, usageError } from './errors.ts';
import { EXIT, type ExitCode } from './exit-codes.ts';
import type { Io } from './io.ts';
import { Output } from './output.ts';
import { activeProfileName, readProfileFile, type ProfileFile } from './profiles.ts';
import { readVersion } from './version.ts';

/** The options every command accepts (defined once on the program). */
export interface GlobalOptions {
  baseUrl?: string;
  apiKey?: string;
  profile?: string;
  json?: boolean;
  quiet?: boolean;
}

export type SettingOrigin = 'flag' | 'env' | 'profile';

export interface Settings {
  profile: string;
  baseUrl: { value: string; origin: SettingOrigin } | null;
  apiKey: { value: string; origin: SettingOrigin } | null;
}

/** Flag over environment over profile, for one setting. */
function pick(
  flag: string | undefined,
  env: string | undefined,
  profile: () => string | undefined,
): { value: string; origin: SettingOrigin } | null {
  if (flag) return { value: flag, origin: 'flag' };
  if (env) return { value: env, origin: 'env' };
  const stored = profile();
  return stored ? { value: stored, origin: 'profile' } : null;
}

export function resolveSettings(globals: GlobalOptions, env: NodeJS.ProcessEnv): Settings {
  // The profile file is read only if a flag or the environment leaves something open.
  let file: ProfileFile | undefined;
  const load = () => (file ??= readProfileFile(env));
  const needsFile = !(globals.baseUrl || env.CONV_BASE_URL) || !(globals.apiKey || env.CONV_API_KEY) || !globals.profile;
  const profile = activeProfileName(globals.profile, env, needsFile ? load() : {});
  const stored = (key: 'base-url' | 'api-key') => () => load().profiles?.[profile]?.[key];
  return {
    profile,
    baseUrl: pick(globals.baseUrl, env.CONV_BASE_URL, stored('base-url')),
    apiKey: pick(globals.apiKey, env.CONV_API_KEY, stored('api-key')),
  };
}

export const NO_SERVER_HINT =
  'point conv at a convd with --base-url URL, CONV_BASE_URL, or `conv config set base-url URL` (and an API key the same way); start one with `convd serve`';

/** The language of the API's messages, from the locale (LC_ALL > LC_MESSAGES > LANG). */
export function localeLanguage(env: NodeJS.ProcessEnv): string | undefined {
  const locale = env.LC_ALL || env.LC_MESSAGES || env.LANG;
  const match = locale ? /^([a-z]{2,3})(?:[_-]([A-Za-z]{2}))?/.exec(locale) : null;
  if (!match || match[1] === 'C' || match[1] === 'en') return undefined;
  return match[2] ? `${match[1]}-${match[2].toUpperCase()}, ${match[1]};q=0.9, en;q=0.5` : `${match[1]}, en;q=0.5`;
}

/** Per-run state shared by the commands: I/O, output mode, settings and the client. */
export class Context {
  private cachedOutput: Output | undefined;
  private cachedSettings: Settings | undefined;
  private clients: { client: ConvClient; unregister: () => void }[] = [];
  exitCode: ExitCode = EXIT.ok;

  constructor(
    readonly io: Io,
    private readonly globals: () => GlobalOptions,
  ) {}

  get options(): GlobalOptions {
    return this.globals();
  }

  get output(): Output {
    const { json = false, quiet = false } = this.globals();
    if (!this.cachedOutput || this.cachedOutput.mode.json !== json || this.cachedOutput.mode.quiet !== quiet) {
      this.cachedOutput = new Output(this.io, { json, quiet });
    }
    return this.cachedOutput;
  }

  /** Resolved once per run: options are fixed once commander has parsed them. */
  settings(): Settings {
    return (this.cachedSettings ??= resolveSettings(this.globals(), this.io.env));
  }

  /** Keeps the worst exit code seen (the first non-zero one wins). */
  fail(code: ExitCode): void {
    if (this.exitCode === EXIT.ok) this.exitCode = code;
  }

  /** True when no base URL is configured: commands that allow it run in-process. */
  isLocal(): boolean {
    return this.settings().baseUrl === null;
  }

  /**
   * The client for this run. With a base URL: HTTP to that server. Without one: in-process when
   * the command allows it (`convert`, `watch`, `formats`), else a usage error saying how to
   * configure a server. In-process, `localWorkers` is how many conversions the service runs at
   * once: the command's own concurrency (-j), so that it is not capped again at the core count.
   */
  async client(options: { allowLocal: boolean; localWorkers?: number }): Promise<ConvClient> {
    const settings = this.settings();
    let client: ConvClient;
    if (settings.baseUrl) {
      const { normalizeBaseUrl } = await import('../src/client/base-url.ts');
      let baseUrl: string;
      try {
        baseUrl = normalizeBaseUrl(settings.baseUrl.value);
      } catch (error) {
        throw usageError(`invalid base URL (from ${settings.baseUrl.origin}): ${(error as Error).message}`);
      }
      if (!settings.apiKey) {
        throw new CliError(
          EXIT.auth, 'unauthenticated', `no API key for ${baseUrl}`,
          `pass --api-key KEY, set CONV_API_KEY, or run \`conv config set api-key KEY${settings.profile === 'default' ? '' : ` --profile ${settings.profile}`}\``,
        );
      }
      const { HttpClient } = await import('../src/client/http-client.ts');
      client = new HttpClient({
        baseUrl,
        apiKey: settings.apiKey.value,
        userAgent: `conv/${readVersion()} node/${process.versions.node}`,
        acceptLanguage: localeLanguage(this.io.env),
      });
    } else if (options.allowLocal) {
      const { createLocalClient } = await import('../src/client/local-client.ts');
      client = await createLocalClient({ env: this.io.env, workers: options.localWorkers });
    } else {
      throw usageError('no server configured: this command needs a convd', NO_SERVER_HINT, 'no_server');
    }
    this.clients.push({ client, unregister: addCleanup(() => client.close()) });
    return client;
  }

  async close(): Promise<void> {
    const clients = this.clients;
    this.clients = [];
    await Promise.allSettled(clients.map(({ client, unregister }) => {
      unregister();
      return client.close();
    }));
  }
}
