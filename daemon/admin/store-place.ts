import type { StorePlace } from '../../src/service/open-store.ts';
import { loadConfig } from '../config-load.ts';
import { SCALARS } from '../config-settings.ts';

/** The variables that say where the store is, beside the one that names the config file. */
const PLACE_VARIABLES = ['CONVD_CONFIG', SCALARS.data_dir.env, SCALARS.database_url.env];

/**
 * Where an admin command finds the store, by the daemon's own precedence for `data_dir` and
 * `database_url`: flag, else `CONVD_*` variable, else the config file (`--config`/`CONVD_CONFIG`),
 * else the default. Read by the daemon's config loader with those variables alone, so that another
 * one a daemon would refuse does not stop an admin command.
 */
export function storePlaceOf(options: { dataDir?: string; databaseUrl?: string; config?: string }): StorePlace {
  const env: NodeJS.ProcessEnv = {};
  for (const name of PLACE_VARIABLES) env[name] = process.env[name];
  const { config } = loadConfig({ flags: { config: options.config, dataDir: options.dataDir, databaseUrl: options.databaseUrl }, env });
  return { dataDir: config.dataDir, databaseUrl: config.databaseUrl };
}
