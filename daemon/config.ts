import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

/** What `convd serve` runs with: flags, else `CONVD_*` environment variables, else defaults. */
export interface DaemonConfig {
  host: string;
  port: number;
  dataDir: string;
  workers: number | undefined;
  publicUrl: string | undefined;
  allowPrivateUrls: boolean;
  allowInsecureCallbacks: boolean;
}

/** DESIGN.md: `--data-dir`, else `$CONVD_DATA_DIR`, else `$XDG_DATA_HOME/convd` (`~/.local/share/convd`). */
export function defaultDataDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.CONVD_DATA_DIR) return resolve(env.CONVD_DATA_DIR);
  const xdg = env.XDG_DATA_HOME || join(homedir(), '.local', 'share');
  return join(xdg, 'convd');
}

export function envFlag(env: NodeJS.ProcessEnv, name: string): boolean | undefined {
  const value = env[name];
  if (value === undefined || value === '') return undefined;
  return /^(1|true|yes|on)$/i.test(value);
}
