import { Command, Option } from 'commander';
import { GROUPS, SCALAR_SETTINGS } from '../config-settings.ts';

const collect = (value: string, previous: string[] | undefined) => [...(previous ?? []), value];

/** The options of `serve` (and `config print`), one per setting of daemon/config-settings.ts. */
export function addSettingOptions(command: Command): Command {
  command.addOption(new Option('--config <file>', 'JSON config file (comments allowed) (env CONVD_CONFIG)'));
  for (const setting of SCALAR_SETTINGS) {
    if (!setting.flag) continue;
    const fallback = setting.key === 'workers' ? 'available cores' : setting.key === 'data_dir' ? '$XDG_DATA_HOME/convd' : setting.fallback();
    const shown = fallback === undefined || fallback === false
      ? ''
      : `, default ${typeof fallback === 'string' || !setting.kind.format ? String(fallback) : String(setting.kind.format(fallback))}`;
    command.addOption(new Option(setting.flag, `${setting.help} (env ${setting.env}${shown})`));
  }
  for (const group of GROUPS) {
    command.addOption(new Option(group.flag, `${group.help} (env ${group.envPrefix}<...>)`).argParser(collect));
  }
  return command;
}

/** The configuration those options, the environment and the file give; exit 2 naming what is invalid. */
export async function loadConfigOrExit(options: Record<string, unknown>) {
  const { ConfigError, loadConfig } = await import('../config-load.ts');
  const input = { flags: options, env: process.env, cwd: process.cwd() };
  try {
    return { loaded: loadConfig(input), input };
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`convd: invalid configuration: ${error.message}\n`);
    process.exitCode = 2;
    return null;
  }
}
