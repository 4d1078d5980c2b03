import type { Command } from 'commander';
import { examples } from '../args.ts';
import type { Context } from '../context.ts';
import { CliError, usageError } from '../errors.ts';
import { EXIT } from '../exit-codes.ts';
import {
  DEFAULT_PROFILE,
  PROFILE_KEYS,
  activeProfileName,
  checkProfileName,
  configPath,
  isProfileKey,
  maskKey,
  openProfileStore,
  readProfileFile,
  type ProfileKey,
} from '../profiles.ts';

function checkKey(key: string): ProfileKey {
  if (!isProfileKey(key)) throw usageError(`unknown setting "${key}": settings are ${PROFILE_KEYS.join(', ')}`);
  return key;
}

export function registerConfig(program: Command, ctx: Context): void {
  const config = program
    .command('config')
    .description('manage profiles: the base URL and API key conv uses')
    .addHelpText('after', `
Settings live in named profiles in $XDG_CONFIG_HOME/conv/config.json (~/.config/conv/config.json),
readable only by you (mode 0600). The profile in effect is --profile, else CONV_PROFILE, else the
one chosen with \`conv config use\`, else "default". A flag beats the environment
(CONV_BASE_URL, CONV_API_KEY), which beats the profile.
${examples([
  ['conv config set base-url http://127.0.0.1:7700/v1', 'use a local convd'],
  ['conv config set api-key cvk_…', 'store the key printed by `convd keys create`'],
  ['conv config set base-url https://convd.example.com/v1 --profile prod', 'a second profile'],
  ['conv config use prod', 'make it the default'],
  ['conv config list', 'every profile (keys masked)'],
])}`);

  config
    .command('set')
    .description('set a setting of the profile (base-url or api-key)')
    .argument('<key>', `one of: ${PROFILE_KEYS.join(', ')}`)
    .argument('<value>')
    .addHelpText('after', examples([
      ['conv config set base-url http://127.0.0.1:7700/v1', ''],
      ['conv config set api-key "$KEY" --profile ci', ''],
    ]))
    .action(async (key: string, value: string) => {
      const setting = checkKey(key);
      let stored = value.trim();
      if (setting === 'base-url') {
        const { normalizeBaseUrl } = await import('../../src/client/base-url.ts');
        try {
          stored = normalizeBaseUrl(stored);
        } catch (error) {
          throw usageError((error as Error).message);
        }
      }
      if (stored === '') throw usageError(`${setting} must not be empty (use \`conv config unset ${setting}\`)`);
      const store = await openProfileStore(ctx.io.env);
      const profile = activeProfileName(ctx.options.profile, ctx.io.env, store.read());
      checkProfileName(profile);
      store.set(profile, setting, stored);
      ctx.output.note(`${profile}: ${setting} set${setting === 'api-key' ? ` (${store.path}, mode 0600)` : ` to ${stored}`}`);
    });

  config
    .command('unset')
    .description('remove a setting from the profile')
    .argument('<key>', `one of: ${PROFILE_KEYS.join(', ')}`)
    .addHelpText('after', examples([['conv config unset api-key --profile old', '']]))
    .action(async (key: string) => {
      const setting = checkKey(key);
      const store = await openProfileStore(ctx.io.env);
      const profile = activeProfileName(ctx.options.profile, ctx.io.env, store.read());
      store.unset(profile, setting);
      ctx.output.note(`${profile}: ${setting} removed`);
    });

  config
    .command('get')
    .description('print a setting of the profile in effect (the stored value, unmasked)')
    .argument('<key>', `one of: ${PROFILE_KEYS.join(', ')}`)
    .addHelpText('after', examples([
      ['conv config get base-url', ''],
      ['conv config get api-key --profile prod', 'exits 1 when not set'],
    ]))
    .action((key: string) => {
      const setting = checkKey(key);
      const file = readProfileFile(ctx.io.env);
      const profile = activeProfileName(ctx.options.profile, ctx.io.env, file);
      const value = file.profiles?.[profile]?.[setting];
      if (value === undefined) {
        throw new CliError(EXIT.error, 'not_set', `${setting} is not set in profile "${profile}"`);
      }
      if (ctx.output.mode.json) ctx.output.json(value);
      else ctx.output.essential(value);
    });

  config
    .command('list')
    .description('list the profiles and their settings (API keys masked)')
    .addHelpText('after', examples([
      ['conv config list', ''],
      ['conv config list --json', '{"current", "path", "profiles": {name: {base-url, api-key}}}'],
    ]))
    .action(() => {
      const file = readProfileFile(ctx.io.env);
      const current = activeProfileName(ctx.options.profile, ctx.io.env, file);
      const profiles = Object.fromEntries(
        Object.entries(file.profiles ?? {}).map(([name, values]) => [
          name,
          { ...values, ...(values['api-key'] !== undefined && { 'api-key': maskKey(values['api-key']) }) },
        ]),
      );
      const out = ctx.output;
      if (out.mode.json) return out.json({ current, path: configPath(ctx.io.env), profiles });
      const names = Object.keys(profiles);
      if (names.length === 0) {
        out.note(`no profiles yet (${configPath(ctx.io.env)}); set one with \`conv config set base-url URL\``);
        return;
      }
      out.table(
        ['', 'PROFILE', 'BASE URL', 'API KEY'],
        names.sort().map((name) => [
          name === current ? '*' : '',
          name,
          profiles[name]?.['base-url'] ?? '-',
          profiles[name]?.['api-key'] ?? '-',
        ]),
      );
    });

  config
    .command('use')
    .description('make a profile the one used by default')
    .argument('<profile>')
    .addHelpText('after', examples([['conv config use prod', ''], ['conv config use default', '']]))
    .action(async (name: string) => {
      checkProfileName(name);
      const store = await openProfileStore(ctx.io.env);
      const existing = store.read().profiles ?? {};
      if (!(name in existing) && name !== DEFAULT_PROFILE) {
        const known = Object.keys(existing);
        throw usageError(
          `no profile "${name}"${known.length ? ` (profiles: ${known.join(', ')})` : ''}`,
          `create it with \`conv config set base-url URL --profile ${name}\``,
        );
      }
      store.use(name);
      ctx.output.note(`now using profile "${name}"`);
    });
}
