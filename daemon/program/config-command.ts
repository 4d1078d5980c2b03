import type { Command } from 'commander';
import { addSettingOptions, loadConfigOrExit } from './setting-options.ts';

export function registerConfig(program: Command): void {
  const configCommand = program.command('config').description('show the configuration convd would run with');
  addSettingOptions(configCommand.command('print')
    .description('print the effective configuration (secrets masked) and where each value comes from')
    .option('--json', 'print JSON: {config_file, settings (shaped like a config file), sources}'))
    .addHelpText('after', '\nTakes the same flags as serve; exit 2 when a value is invalid, naming it.')
    .action(async (options: Record<string, unknown>) => {
      const result = await loadConfigOrExit(options);
      if (!result) return;
      const { configAsJson, configAsText } = await import('../config-print.ts');
      process.stdout.write(options.json ? `${JSON.stringify(configAsJson(result.loaded), null, 2)}\n` : `${configAsText(result.loaded)}\n`);
    });
}
