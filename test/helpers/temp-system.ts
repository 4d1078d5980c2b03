import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultServiceConfig } from '../../src/service/config.ts';
import { openSystem, type ConversionSystem, type SystemOptions } from '../../src/service/system.ts';

export interface TempSystem {
  system: ConversionSystem;
  /** Its data dir (in a temp dir of its own). */
  dataDir: string;
  /** Stops the system and removes its temp dir. */
  close(): Promise<void>;
}

/** A ConversionSystem on a fresh data dir in the system's temp dir: the default config, one worker, no engines unless given. */
export async function openTempSystem(prefix: string, options: Partial<SystemOptions> = {}): Promise<TempSystem> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  const dataDir = join(dir, 'data');
  const system = await openSystem({ dataDir, config: defaultServiceConfig({}), workers: 1, engines: [], ...options });
  return {
    system,
    dataDir,
    close: async () => {
      await system.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
