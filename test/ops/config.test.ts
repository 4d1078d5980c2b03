/**
 * Configuration of the real convd: flag > CONVD_* environment > config file > default, for
 * scalars and nested settings; the running daemon uses what `config print` reports; secrets
 * never printed; every invalid value stops the start with exit 2 and a message naming it;
 * SIGHUP applies the reloadable part of an edited file and says what needs a restart.
 */
import assert from 'node:assert/strict';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../daemon/config-load.ts';
import { convdAdmin } from '../helpers/daemon.ts';
import { call, runConvd, startConvd, tempDir, waitUntil, type Convd } from '../helpers/ops-support.ts';

interface Printed {
  config_file: string | null;
  settings: Record<string, any>;
  sources: Record<string, string>;
}

async function printJson(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Printed> {
  const result = await runConvd(['config', 'print', '--json', ...args], env);
  assert.equal(result.code, 0, result.stderr);
  return JSON.parse(result.stdout) as Printed;
}

describe('precedence: flag > env > file > default', () => {
  let dir: string;
  let file: string;
  before(async () => {
    dir = await tempDir();
    file = join(dir, 'convd.json');
    await writeFile(file, `{
      // comments are allowed: say why a limit is what it is
      "workers": 3,
      "retention_days": 9,
      "data_dir": "data",
      "plans": { "free": { "max_upload_mb": 200, "requests_per_minute": 45 } },
      "credit_weights": { "video": 6 },
      "engine_timeout_ms": { "media": "90s" },
    }`);
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('takes each setting from the highest source that sets it', async () => {
    const env = { CONVD_CONFIG: file, CONVD_WORKERS: '4', CONVD_PLAN_FREE_MAX_UPLOAD_MB: '300', CONVD_ENGINE_TIMEOUT_MS_MEDIA: '120000' };
    const all = await printJson(['--workers', '5', '--plan', 'free.max_upload_mb=400'], env);
    assert.equal(all.config_file, file);
    assert.deepEqual([all.settings.workers, all.sources.workers], [5, 'flag']);
    assert.deepEqual([all.settings.plans.free.max_upload_mb, all.sources['plans.free.max_upload_mb']], [400, 'flag']);
    assert.deepEqual([all.settings.engine_timeout_ms.media, all.sources['engine_timeout_ms.media']], ['120s', 'env']);
    assert.deepEqual([all.settings.retention_days, all.sources.retention_days], [9, 'file']);
    assert.deepEqual([all.settings.plans.free.requests_per_minute, all.sources['plans.free.requests_per_minute']], [45, 'file']);
    assert.deepEqual([all.settings.credit_weights.video, all.sources['credit_weights.video']], [6, 'file']);
    // A relative path in the file is taken from the file's directory, not the working directory.
    assert.equal(all.settings.data_dir, join(dir, 'data'));
    assert.deepEqual([all.settings.plans.pro.max_upload_mb, all.sources['plans.pro.max_upload_mb']], [5000, 'default']);

    const noFlag = await printJson([], env);
    assert.deepEqual([noFlag.settings.workers, noFlag.sources.workers], [4, 'env']);
    assert.deepEqual([noFlag.settings.plans.free.max_upload_mb, noFlag.sources['plans.free.max_upload_mb']], [300, 'env']);
    const fileOnly = await printJson(['--config', file]);
    assert.deepEqual([fileOnly.settings.workers, fileOnly.sources.workers], [3, 'file']);
    assert.deepEqual([fileOnly.settings.engine_timeout_ms.media, fileOnly.sources['engine_timeout_ms.media']], ['90s', 'file']);
    const none = await printJson([]);
    assert.equal(none.config_file, null);
    assert.equal(none.sources.workers, 'default');
    assert.equal(none.settings.retention_days, 30);
  });

  it('the running daemon uses the merged values (plan limits and weights seen through /v1)', async () => {
    const daemon = await startConvd({
      args: ['--config', file, '--plan', 'free.max_upload_mb=400'],
      env: { CONVD_PLAN_FREE_CONCURRENT_CONVERSIONS: '7', CONVD_CREDIT_WEIGHT_IMAGE: '3' },
    });
    try {
      const created = await convdAdmin(daemon.dataDir, ['accounts', 'create', '--plan', 'free', '--json']);
      const key = await convdAdmin(daemon.dataDir, ['keys', 'create', '--account', (created.json as { id: string }).id, '--json']);
      const freeKey = (key.json as { key: string }).key;
      const account = await call(daemon, '/v1/account', { key: freeKey });
      assert.equal(account.status, 200);
      assert.equal(account.body.limits.max_upload_mb, 400, 'flag');
      assert.equal(account.body.limits.concurrent_conversions, 7, 'environment');
      assert.equal(account.body.limits.requests_per_minute, 45, 'config file');
      assert.equal(account.body.limits.window_seconds, 600, 'default');
      assert.equal(account.headers.get('ratelimit-limit'), '45');
      const png = await call(daemon, '/v1/formats/png', { key: freeKey });
      assert.equal(png.body.data.find((t: { target: string }) => t.target === 'webp').credit_weight, 3);
    } finally {
      await daemon.dispose();
    }
  });

  it('keeps the names tests and docs already use (CONVD_ALLOW_PRIVATE_URLS=1, CONVD_WEBHOOK_SCHEDULE_SCALE)', async () => {
    const printed = await printJson([], { CONVD_ALLOW_PRIVATE_URLS: '1', CONVD_WEBHOOK_SCHEDULE_SCALE: '0.001', CONVD_DATA_DIR: dir });
    assert.deepEqual([printed.settings.allow_private_urls, printed.sources.allow_private_urls], [true, 'env']);
    assert.deepEqual([printed.settings.webhook_schedule_scale, printed.sources.webhook_schedule_scale], [0.001, 'env']);
    assert.equal(printed.settings.data_dir, dir);
  });
});

describe('config print --json', () => {
  it('prints settings that, saved as a file, give the same configuration', async () => {
    const dir = await tempDir();
    try {
      const first = await printJson(['--metrics-listen', '[::1]:9464', '--trusted-proxy', '127.0.0.1,10.0.0.0/8', '--drain-timeout', '1500ms', '--plan', 'pro.requests_per_minute=900']);
      const file = join(dir, 'saved.json');
      await writeFile(file, JSON.stringify(first.settings));
      const second = await printJson(['--config', file]);
      assert.deepEqual(second.settings, first.settings);
      assert.ok(Object.values(second.sources).every((source) => source === 'file' || source === 'default'));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('secrets are masked', () => {
  it('config print shows that a metrics token and a URL password are set, never what they are', async () => {
    const args = ['--metrics-token', 'tok-s3cr3t-value', '--public-url', 'https://ops:pw-s3cr3t@convert.example.com/'];
    const text = await runConvd(['config', 'print', ...args]);
    const json = await runConvd(['config', 'print', '--json', ...args]);
    for (const out of [text, json]) {
      assert.equal(out.code, 0, out.stderr);
      assert.ok(!out.stdout.includes('tok-s3cr3t-value') && !out.stdout.includes('pw-s3cr3t'), out.stdout);
    }
    const printed = JSON.parse(json.stdout) as Printed;
    assert.equal(printed.settings.metrics_token, '********');
    assert.equal(printed.settings.public_url, 'https://ops:********@convert.example.com/');
    assert.match(text.stdout, /metrics_token\s+= \*{8}\s+\(flag\)/);
  });
});

describe('invalid values stop the start with exit 2, naming the setting', () => {
  let dir: string;
  before(async () => {
    dir = await tempDir();
  });
  after(() => rm(dir, { recursive: true, force: true }));

  const cases: { name: string; args?: string[]; env?: NodeJS.ProcessEnv; file?: string; expect: RegExp[] }[] = [
    { name: 'a port out of range (flag)', args: ['--port', '70000'], expect: [/--port must be a whole number from 0 to 65535, not "70000"/] },
    { name: 'workers that are not a number (env)', env: { CONVD_WORKERS: 'many' }, expect: [/CONVD_WORKERS must be a whole number from 0 to 1024, not "many"/] },
    { name: 'a boolean that is not one', env: { CONVD_ALLOW_PRIVATE_URLS: 'perhaps' }, expect: [/CONVD_ALLOW_PRIVATE_URLS must be true or false/] },
    { name: 'a negative plan limit (file)', file: '{"plans":{"free":{"max_upload_mb":-1}}}', expect: [/convd\.json: plans\.free\.max_upload_mb must be a whole number >= 1, not -1/] },
    { name: 'a misspelt key (file)', file: '{"prot": 8080, "plans": {"free": {"max_upload": 3}}}', expect: [/unknown setting "prot"/, /unknown setting "plans\.free\.max_upload"/] },
    { name: 'a file that is not JSON', file: '{"port": 8080,\n  "workers": }', expect: [/convd\.json:2:14: invalid JSON/] },
    { name: 'a misspelt nested variable', env: { CONVD_PLAN_FREE_MAX_UPLOD_MB: '5' }, expect: [/CONVD_PLAN_FREE_MAX_UPLOD_MB: no such setting/] },
    { name: 'an unknown engine time limit (old variable name, new check)', env: { CONVD_ENGINE_TIMEOUT_MS_VIDEO: '5000' }, expect: [/CONVD_ENGINE_TIMEOUT_MS_VIDEO: no such setting.*IMAGE, PDF, PDFPAGES, DATA, MEDIA/] },
    { name: 'a bad group flag', args: ['--credit-weight', 'video'], expect: [/--credit-weight "video": expected kind=n/] },
    { name: 'a schedule scale of 0', env: { CONVD_WEBHOOK_SCHEDULE_SCALE: '0' }, expect: [/CONVD_WEBHOOK_SCHEDULE_SCALE must be a number greater than 0 and at most 1/] },
    { name: 'a trusted proxy that is no address', args: ['--trusted-proxy', '127.0.0.1,300.1.1.1'], expect: [/--trusted-proxy must be a list of IP addresses or CIDR ranges.*"300\.1\.1\.1"/] },
    { name: 'a certificate without its key', args: ['--tls-cert', '/etc/hostname'], expect: [/--tls-cert: TLS needs both tls_cert and tls_key/] },
    { name: 'a key file that cannot be read', args: ['--tls-cert', '/etc/hostname', '--tls-key', '/nonexistent/key.pem'], expect: [/--tls-key: \/nonexistent\/key\.pem cannot be read \(ENOENT\)/] },
    { name: 'files that are no certificate and key', args: ['--tls-cert', '/etc/hostname', '--tls-key', '/etc/hostname'], expect: [/--tls-cert and --tls-key: not a usable PEM certificate and private key/] },
    { name: 'a duration without a number', args: ['--drain-timeout', 'soon'], expect: [/--drain-timeout must be a duration such as 500ms/] },
    { name: 'a metrics address without a port', args: ['--metrics-listen', '127.0.0.1:'], expect: [/--metrics-listen must be host:port/] },
    { name: 'every problem at once', args: ['--port', '-1', '--log-level', 'chatty'], env: { CONVD_DISK_FLOOR_MB: '1.5' }, expect: [/3 problems/, /--port/, /--log-level must be one of debug, info, warn, error/, /CONVD_DISK_FLOOR_MB/] },
  ];

  for (const c of cases) {
    it(c.name, async () => {
      const args = [...(c.args ?? [])];
      if (c.file !== undefined) {
        const file = join(dir, 'convd.json');
        await writeFile(file, c.file);
        args.push('--config', file);
      }
      // `serve` (what systemd runs) and `config print` (what an operator checks with) agree.
      for (const command of [['serve', '--port', '0', '--data-dir', join(dir, 'never'), ...args], ['config', 'print', ...args]]) {
        const result = await runConvd(command, c.env ?? {});
        assert.equal(result.code, 2, `${command.join(' ')}: ${result.stderr}`);
        assert.match(result.stderr, /^convd: invalid configuration: /);
        for (const pattern of c.expect) assert.match(result.stderr, pattern);
        assert.ok(!result.stderr.includes('listening'), 'nothing was started');
      }
    });
  }
});

describe('SIGHUP reloads the config file where that is safe', () => {
  let dir: string;
  let file: string;
  let daemon: Convd;
  let freeKey: string;
  before(async () => {
    dir = await tempDir();
    file = join(dir, 'convd.json');
    await writeFile(file, JSON.stringify({ plans: { free: { requests_per_minute: 100 } }, log_level: 'info' }));
    daemon = await startConvd({ args: ['--config', file] });
    const created = await convdAdmin(daemon.dataDir, ['accounts', 'create', '--plan', 'free', '--json']);
    freeKey = ((await convdAdmin(daemon.dataDir, ['keys', 'create', '--account', (created.json as { id: string }).id, '--json'])).json as { key: string }).key;
  });
  after(async () => {
    await daemon.dispose();
    await rm(dir, { recursive: true, force: true });
  });

  const reloads = () => daemon.logs().filter((l) => l.event === 'config.reloaded' || l.event === 'config.reload_failed');

  it('applies plans and log level at once, and names what needs a restart', async () => {
    assert.equal((await call(daemon, '/v1/account', { key: freeKey })).body.limits.requests_per_minute, 100);
    await writeFile(file, JSON.stringify({ plans: { free: { requests_per_minute: 7 } }, log_level: 'warn', port: 1, host: '127.0.0.2', workers: 1 }));
    // port: the --port flag wins over the file, so its effective value does not change.
    daemon.signal('SIGHUP');
    const line = await waitUntil('the reload line', () => reloads()[0]);
    assert.equal(line.event, 'config.reloaded');
    assert.deepEqual(new Set(line.applied as string[]), new Set(['plans.free.requests_per_minute', 'log_level']));
    assert.deepEqual(new Set(line.needs_restart as string[]), new Set(['host', 'workers']));
    const account = await call(daemon, '/v1/account', { key: freeKey });
    assert.equal(account.body.limits.requests_per_minute, 7);
    assert.equal(account.headers.get('ratelimit-limit'), '7');
    // Level warn now: no more request lines.
    const requestsBefore = daemon.logs().filter((l) => l.event === 'request').length;
    await call(daemon, '/v1/account');
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(daemon.logs().filter((l) => l.event === 'request').length, requestsBefore);
    assert.ok(daemon.url.endsWith(`:${new URL(daemon.url).port}`) && (await call(daemon, '/healthz')).status === 200, 'still on its port');
  });

  it('an invalid file changes nothing and says why', async () => {
    await writeFile(file, JSON.stringify({ plans: { free: { requests_per_minute: 'lots' } } }));
    daemon.signal('SIGHUP');
    const line = await waitUntil('the failed reload line', () => reloads()[1]);
    assert.equal(line.event, 'config.reload_failed');
    assert.match(JSON.stringify(line.problems), /plans\.free\.requests_per_minute must be a whole number/);
    assert.equal((await call(daemon, '/v1/account', { key: freeKey })).body.limits.requests_per_minute, 7);
  });
});

describe('CONVD_ variables of the engines', () => {
  it('CONVD_PANDOC_PATH, CONVD_SOFFICE_PATH and CONVD_OFFICE_PYTHON (where engines find their programs) are not warned about; an unknown CONVD_ variable is', () => {
    const engines = { CONVD_PANDOC_PATH: '/usr/bin/pandoc', CONVD_SOFFICE_PATH: '/usr/bin/soffice', CONVD_OFFICE_PYTHON: '/usr/bin/python3' };
    const loaded = loadConfig({ flags: {}, env: { ...engines, CONVD_NO_SUCH_THING: '1' } });
    assert.deepEqual(loaded.warnings, ['CONVD_NO_SUCH_THING is not a convd setting and is ignored']);
  });
});
