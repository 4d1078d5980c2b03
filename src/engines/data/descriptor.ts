import { BYTES_PER_MB } from '../../model/plan.ts';
import { defineEngine, type EngineSettingRow } from '../descriptor.ts';
import { DEFAULT_INPUT_CAPS, type InputCaps } from './input-caps.ts';

/** What the data engine reads whole at most anyway (read.ts). */
const OWN_MACHINE_CAP = 256 * 1024 * 1024;

const capRow = (format: keyof InputCaps): EngineSettingRow<InputCaps> => ({
  key: format, field: format, kind: { type: 'integer', min: 1, max: 1_048_576 }, scale: BYTES_PER_MB, help: `largest ${format} input parsed whole, in MiB`,
});

/** Tables, JSON, YAML and Markdown, by JavaScript libraries: in the engine host. */
export const data = defineEngine<InputCaps>({
  name: 'data',
  defaults: () => ({ ...DEFAULT_INPUT_CAPS }),
  group: {
    prefix: 'input_cap_mb',
    arg: 'format=MiB',
    help: 'largest input the data engine parses whole, per format (md, json, yaml), e.g. yaml=8 (repeatable)',
    rows: (Object.keys(DEFAULT_INPUT_CAPS) as (keyof InputCaps)[]).map(capRow),
  },
  // The user's own machine, not a shared service: the caps are those of the engine itself.
  inProcess: () => ({ md: OWN_MACHINE_CAP, json: OWN_MACHINE_CAP, yaml: OWN_MACHINE_CAP }),
  limits: { timeLimitMs: 120_000, listedAt: 4 },
  loader: (_settings, own) => ({ isolated: true, load: async () => (await import('./data-engine.ts')).createDataEngine({ inputCaps: own }) }),
});
