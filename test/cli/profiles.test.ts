import assert from 'node:assert/strict';
import { readFile, stat, writeFile, mkdir, chmod } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { resolveSettings } from '../../cli/context.ts';
import { configPath } from '../../cli/profiles.ts';
import { cleanEnv, runConv, tempDir } from '../helpers/cli-helpers.ts';

/** `conv config` and the precedence flag > env > profile, with the config in a temp XDG_CONFIG_HOME. */

let home: { path: string; remove: () => Promise<void> };
let env: NodeJS.ProcessEnv;

before(async () => {
  home = await tempDir('conv-profiles-');
});
after(() => home.remove());

let counter = 0;
beforeEach(() => {
  // A fresh config directory per test.
  counter += 1;
  env = cleanEnv({ HOME: home.path, XDG_CONFIG_HOME: join(home.path, `xdg-${counter}`) });
});

const conv = (args: string[], extra: NodeJS.ProcessEnv = {}) => runConv(args, { env: { ...env, ...extra }, cwd: home.path });

describe('conv config', () => {
  it('set writes the profile file with mode 0600 in a 0700 directory', async () => {
    const set = await conv(['config', 'set', 'api-key', 'cvk_abcdefghijklmnopqrstuvwxyz']);
    assert.equal(set.code, 0, set.stderr);
    const path = configPath(env);
    assert.equal(path, join(env.XDG_CONFIG_HOME!, 'conv', 'config.json'));
    assert.equal((await stat(path)).mode & 0o777, 0o600);
    assert.equal((await stat(join(env.XDG_CONFIG_HOME!, 'conv'))).mode & 0o777, 0o700);
    const stored = JSON.parse(await readFile(path, 'utf8')) as unknown;
    assert.deepEqual(stored, { profiles: { default: { 'api-key': 'cvk_abcdefghijklmnopqrstuvwxyz' } } });
  });

  it('keeps the file private even when it existed with wider permissions', async () => {
    const path = configPath(env);
    await mkdir(join(env.XDG_CONFIG_HOME!, 'conv'), { recursive: true });
    await writeFile(path, '{}');
    await chmod(path, 0o644);
    assert.equal((await conv(['config', 'set', 'api-key', 'cvk_x'])).code, 0);
    assert.equal((await stat(path)).mode & 0o777, 0o600);
  });

  it('set base-url normalizes, get prints the stored value, unset removes it', async () => {
    assert.equal((await conv(['config', 'set', 'base-url', 'http://127.0.0.1:7700/'])).code, 0);
    const get = await conv(['config', 'get', 'base-url']);
    assert.equal(get.code, 0);
    assert.equal(get.stdout, 'http://127.0.0.1:7700/v1\n');
    assert.equal((await conv(['config', 'get', 'base-url', '--json'])).stdout.trim(), '"http://127.0.0.1:7700/v1"');
    assert.equal((await conv(['config', 'unset', 'base-url'])).code, 0);
    const missing = await conv(['config', 'get', 'base-url']);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /^error: not_set: base-url is not set in profile "default"/);
  });

  it('rejects unknown settings and bad URLs with exit 2', async () => {
    const key = await conv(['config', 'set', 'colour', 'blue']);
    assert.equal(key.code, 2);
    assert.match(key.stderr, /unknown setting "colour": settings are base-url, api-key/);
    const url = await conv(['config', 'set', 'base-url', 'ftp://x']);
    assert.equal(url.code, 2);
    assert.match(url.stderr, /must be http or https/);
    const name = await conv(['config', 'set', 'base-url', 'http://x/v1', '--profile', '../evil']);
    assert.equal(name.code, 2);
  });

  it('profiles: --profile writes and reads another profile, use switches, list masks keys', async () => {
    await conv(['config', 'set', 'base-url', 'http://local:7700/v1']);
    await conv(['config', 'set', 'base-url', 'https://prod.example/v1', '--profile', 'prod']);
    await conv(['config', 'set', 'api-key', 'cvk_prod_0123456789abcdef', '--profile', 'prod']);
    assert.equal((await conv(['config', 'get', 'base-url'])).stdout.trim(), 'http://local:7700/v1');
    assert.equal((await conv(['config', 'get', 'base-url', '--profile', 'prod'])).stdout.trim(), 'https://prod.example/v1');
    assert.equal((await conv(['config', 'get', 'base-url'], { CONV_PROFILE: 'prod' })).stdout.trim(), 'https://prod.example/v1');

    const unknown = await conv(['config', 'use', 'staging']);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /no profile "staging" \(profiles: default, prod\)/);

    assert.equal((await conv(['config', 'use', 'prod'])).code, 0);
    assert.equal((await conv(['config', 'get', 'base-url'])).stdout.trim(), 'https://prod.example/v1');

    const list = await conv(['config', 'list', '--json']);
    assert.equal(list.code, 0);
    assert.deepEqual(JSON.parse(list.stdout), {
      current: 'prod',
      path: configPath(env),
      profiles: {
        default: { 'base-url': 'http://local:7700/v1' },
        prod: { 'base-url': 'https://prod.example/v1', 'api-key': 'cvk_prod…cdef' },
      },
    });
    const table = await conv(['config', 'list']);
    assert.match(table.stdout, /^\s+PROFILE\s+BASE URL\s+API KEY\n\s+default\s+http:\/\/local:7700\/v1\s+-\n\*\s+prod\s+https:\/\/prod\.example\/v1\s+cvk_prod…cdef\n$/);
    assert.ok(!table.stdout.includes('0123456789'), 'the key is masked');
  });

  it('a corrupt config file is reported, not ignored', async () => {
    await mkdir(join(env.XDG_CONFIG_HOME!, 'conv'), { recursive: true });
    await writeFile(configPath(env), '{"profiles":');
    const result = await conv(['list']);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /^error: config_invalid: .*config\.json: not valid JSON/);
  });
});

describe('precedence: flag > env > profile', () => {
  it('resolves each setting from the strongest source that has it', async () => {
    await conv(['config', 'set', 'base-url', 'http://profile:1/v1']);
    await conv(['config', 'set', 'api-key', 'cvk_profile']);
    const fromProfile = resolveSettings({}, env);
    assert.deepEqual(fromProfile, {
      profile: 'default',
      baseUrl: { value: 'http://profile:1/v1', origin: 'profile' },
      apiKey: { value: 'cvk_profile', origin: 'profile' },
    });
    const envOver = resolveSettings({}, { ...env, CONV_BASE_URL: 'http://env:2/v1' });
    assert.deepEqual(envOver.baseUrl, { value: 'http://env:2/v1', origin: 'env' });
    assert.deepEqual(envOver.apiKey, { value: 'cvk_profile', origin: 'profile' });
    const flagOver = resolveSettings({ baseUrl: 'http://flag:3/v1', apiKey: 'cvk_flag' }, { ...env, CONV_BASE_URL: 'http://env:2/v1', CONV_API_KEY: 'cvk_env' });
    assert.deepEqual(flagOver.baseUrl, { value: 'http://flag:3/v1', origin: 'flag' });
    assert.deepEqual(flagOver.apiKey, { value: 'cvk_flag', origin: 'flag' });
    const none = resolveSettings({ profile: 'other' }, env);
    assert.equal(none.baseUrl, null);
  });

  it('the profile base URL is what the commands use (a closed port: network error, exit 1)', async () => {
    await conv(['config', 'set', 'base-url', 'http://127.0.0.1:9/v1']);
    await conv(['config', 'set', 'api-key', 'cvk_x']);
    const result = await conv(['account', '--api-key', 'cvk_y']);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /^error: network_error: cannot reach http:\/\/127\.0\.0\.1:9\/v1/);
  });
});
