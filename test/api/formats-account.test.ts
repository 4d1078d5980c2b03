/**
 * GET /formats, GET /formats/{source} and GET /account over real HTTP: every field of spec 2.4,
 * 2.5 and 2.6, the plan values docs/api.md gives for each plan, a plan change through the
 * admin CLI, and the monthly credit reset (the store is moved past `resets_at` while the daemon
 * is stopped).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  assertError, call, getAccount, newAccount, newAccountWithCli, png, submitFile, type AccountView, type Client, type FormatDetails,
  type FormatListing,
} from '../helpers/api-support.ts';
import { convdAdmin, startDaemon, type DaemonHandle } from '../helpers/daemon.ts';
import { editStoreFile } from '../helpers/store-files.ts';

const IMAGE_TARGETS = ['avif', 'gif', 'jpg', 'png', 'tiff', 'webp'];

/** The plan values docs/api.md gives, the spec's and this service's own. */
const PLANS = {
  free: { name: 'Free', type: 'free_api_credits', allowance: 100, upload: 100, window: 20, concurrent: 2, rpm: 30, enginePerHour: 600, officeLimit: 60 },
  lite: { name: 'Lite', type: 'plan_credits', allowance: 1000, upload: 1000, window: 100, concurrent: 5, rpm: 120, enginePerHour: 3600, officeLimit: 180 },
  standard: { name: 'Standard', type: 'plan_credits', allowance: 2500, upload: 2000, window: 250, concurrent: 10, rpm: 300, enginePerHour: 7200, officeLimit: 300 },
  pro: { name: 'Pro', type: 'plan_credits', allowance: 5000, upload: 5000, window: 500, concurrent: 20, rpm: 600, enginePerHour: 14400, officeLimit: 300 },
} as const;

const ENGINE_KINDS = ['data', 'html', 'image', 'markup', 'media', 'ocr', 'office', 'pdf', 'pdfops', 'pdfpages', 'postscript', 'raster'];

function nextHourStart(now = Date.now()): string {
  return new Date(Math.ceil((now + 1) / 3_600_000) * 3_600_000).toISOString();
}

function nextMonthStart(now = new Date()): string {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString();
}

function assertAccountShape(account: AccountView): void {
  assert.deepEqual(Object.keys(account).sort(), ['credits', 'engine_time', 'limits', 'plan']);
  assert.deepEqual(Object.keys(account.plan).sort(), ['id', 'name']);
  assert.deepEqual(Object.keys(account.credits).sort(), ['monthly_allowance', 'remaining', 'resets_at', 'type']);
  assert.deepEqual(Object.keys(account.limits).sort(), [
    'active_conversions', 'concurrent_conversions', 'conversions_per_window', 'max_upload_mb', 'requests_per_minute',
    'result_ttl_hours', 'time_limits', 'window_seconds',
  ]);
  const { time_limits: timeLimits, ...counts } = account.limits;
  for (const value of Object.values(counts)) assert.ok(Number.isInteger(value), JSON.stringify(account.limits));
  assert.deepEqual(Object.keys(timeLimits).sort(), ENGINE_KINDS);
  for (const value of Object.values(timeLimits)) assert.ok(Number.isInteger(value) && value > 0, JSON.stringify(timeLimits));
  assert.deepEqual(Object.keys(account.engine_time).sort(), ['allowance_seconds', 'remaining_seconds', 'resets_at', 'used_seconds']);
}

describe('formats and account over HTTP', () => {
  let daemon: DaemonHandle;
  const accounts: Partial<Record<keyof typeof PLANS, Client & { accountId: string }>> = {};

  before(async () => {
    daemon = await startDaemon();
    // Through the admin CLI (`--json`), as an operator would.
    const made = await Promise.all((Object.keys(PLANS) as (keyof typeof PLANS)[]).map(async (plan) => [plan, await newAccountWithCli(daemon, plan)] as const));
    for (const [plan, client] of made) accounts[plan] = client;
  });
  after(() => daemon.dispose());

  describe('GET /formats', () => {
    it('lists every source with its targets (spec 2.4)', async () => {
      const got = await call<FormatListing>(daemon, '/formats');
      assert.equal(got.status, 200);
      assert.deepEqual(Object.keys(got.body), ['data']);
      const bySource = new Map(got.body.data.map((entry) => [entry.source, entry.targets]));
      for (const entry of got.body.data) {
        assert.deepEqual(Object.keys(entry).sort(), ['source', 'targets']);
        assert.ok(entry.targets.length > 0, entry.source);
        assert.deepEqual([...entry.targets].sort(), entry.targets, 'targets sorted');
      }
      for (const source of ['jpg', 'png', 'webp', 'gif', 'tiff', 'svg']) {
        for (const target of IMAGE_TARGETS) assert.ok(bySource.get(source)?.includes(target), `${source} -> ${target}`);
      }
      // svg is read, never written, by the image engine.
      for (const source of ['jpg', 'png', 'webp', 'gif', 'tiff', 'svg']) assert.ok(!bySource.get(source)?.includes('svg'), source);
      assert.equal(new Set(got.body.data.map((e) => e.source)).size, got.body.data.length, 'each source once');
    });

    it('every listed pair has details that agree', async () => {
      const listing = (await call<FormatListing>(daemon, '/formats')).body;
      for (const { source, targets } of listing.data) {
        const details = await call<FormatDetails>(daemon, `/formats/${source}`);
        assert.equal(details.status, 200, source);
        assert.equal(details.body.source, source);
        assert.deepEqual(details.body.data.map((d) => d.target), targets, source);
      }
    });
  });

  describe('GET /formats/{source}', () => {
    it('gives targets, option descriptors, variants, size limit and credit weight (spec 2.5)', async () => {
      const got = await call<FormatDetails>(daemon, '/formats/png');
      assert.equal(got.status, 200);
      assert.deepEqual(Object.keys(got.body).sort(), ['data', 'source']);
      assert.equal(got.body.source, 'png');
      const targets = got.body.data.map((d) => d.target);
      assert.deepEqual([...targets].sort(), targets);
      for (const target of IMAGE_TARGETS) assert.ok(targets.includes(target), target);
      for (const entry of got.body.data) {
        assert.deepEqual(Object.keys(entry).sort(), ['credit_weight', 'max_upload_mb', 'options', 'target', 'variants']);
        assert.ok(Number.isInteger(entry.credit_weight) && entry.credit_weight >= 1);
        assert.equal(entry.max_upload_mb, 10000, 'the unmetered plan');
        for (const variant of entry.variants) {
          assert.deepEqual(Object.keys(variant).sort(), ['key', 'label']);
          assert.equal(typeof variant.key, 'string');
          assert.equal(typeof variant.label, 'string');
        }
        for (const option of entry.options) {
          // The spec's keys, and the documented extensions (docs/api.md, the OpenAPI document): a
          // text option's pattern (OCR's language), what an option needs or excludes.
          for (const key of Object.keys(option)) assert.ok(['name', 'type', 'values', 'min', 'max', 'default', 'label', 'pattern', 'requires', 'excludes'].includes(key), key);
          assert.ok(['range', 'number', 'enum', 'bool', 'text'].includes(option.type));
          assert.ok(Array.isArray(option.values));
          assert.equal(typeof option.label, 'string');
          assert.ok('default' in option);
          if (option.type === 'range' || option.type === 'number') {
            assert.ok(Number.isInteger(option.min) && Number.isInteger(option.max), option.name);
          }
          if (option.type === 'enum') assert.ok(option.values.length > 0);
        }
      }
      // The image targets: weight 1, one mode, the options of the image engine.
      for (const entry of got.body.data.filter((d) => IMAGE_TARGETS.includes(d.target))) {
        assert.equal(entry.credit_weight, 1, 'images weigh 1');
        assert.deepEqual(entry.variants, []);
        const byName = new Map(entry.options.map((o) => [o.name, o]));
        assert.deepEqual(byName.get('width'), { name: 'width', type: 'number', values: [], min: 1, max: 16384, default: null, label: 'Width in pixels' });
        assert.ok(byName.has('height'));
        assert.deepEqual(byName.get('fit')?.values, ['inside', 'cover', 'contain', 'fill', 'outside']);
        assert.equal(byName.get('fit')?.default, 'inside');
        assert.equal(byName.get('strip')?.type, 'bool');
        assert.equal(byName.get('strip')?.default, true);
        const quality = byName.get('quality');
        if (['jpg', 'webp', 'avif'].includes(entry.target)) {
          assert.deepEqual(quality, { name: 'quality', type: 'range', values: [], min: 1, max: 100, default: 80, label: 'Quality' });
        } else {
          assert.equal(quality, undefined, `${entry.target} is lossless`);
        }
      }
    });

    it('max_upload_mb is the caller’s plan’s', async () => {
      for (const [plan, values] of Object.entries(PLANS)) {
        const got = await call<FormatDetails>(accounts[plan as keyof typeof PLANS]!, '/formats/jpg');
        assert.ok(got.body.data.every((d) => d.max_upload_mb === values.upload), plan);
      }
    });

    it('accepts aliases and any case; 404 not_found for an unknown source', async () => {
      for (const [asked, source] of [['jpeg', 'jpg'], ['JPG', 'jpg'], ['tif', 'tiff'], ['PNG', 'png']]) {
        const got = await call<FormatDetails>(daemon, `/formats/${asked}`);
        assert.equal(got.status, 200, asked);
        assert.equal(got.body.source, source);
      }
      for (const unknown of ['nosuchformat', 'exe', '..', '%20']) assertError(await call(daemon, `/formats/${unknown}`), 404, 'not_found');
    });
  });

  describe('GET /account', () => {
    it('the bootstrap account is unmetered: remaining and resets_at null, limits integers', async () => {
      const got = await getAccount(daemon);
      assert.equal(got.status, 200);
      assertAccountShape(got.body);
      assert.deepEqual(got.body.plan, { id: 'unmetered', name: 'Unmetered' });
      assert.deepEqual(got.body.credits, { type: 'unmetered', remaining: null, monthly_allowance: 0, resets_at: null });
      const { time_limits: timeLimits, ...limits } = got.body.limits;
      assert.deepEqual(limits, {
        max_upload_mb: 10000, conversions_per_window: 100000, window_seconds: 600, concurrent_conversions: 1000,
        active_conversions: 0, requests_per_minute: 60000, result_ttl_hours: 24,
      });
      assert.equal(timeLimits.office, 300);
      assert.equal(timeLimits.media, 1800);
      assert.deepEqual({ ...got.body.engine_time, resets_at: null }, { allowance_seconds: 0, used_seconds: 0, remaining_seconds: null, resets_at: null });
    });

    for (const [plan, values] of Object.entries(PLANS)) {
      it(`a ${plan} account has the plan’s credits and limits`, async () => {
        const got = await getAccount(accounts[plan as keyof typeof PLANS]!);
        assert.equal(got.status, 200);
        assertAccountShape(got.body);
        assert.deepEqual(got.body.plan, { id: plan, name: values.name });
        assert.deepEqual(got.body.credits, { type: values.type, remaining: values.allowance, monthly_allowance: values.allowance, resets_at: nextMonthStart() });
        const { time_limits: timeLimits, ...limits } = got.body.limits;
        assert.deepEqual(limits, {
          max_upload_mb: values.upload, conversions_per_window: values.window, window_seconds: 600,
          concurrent_conversions: values.concurrent, active_conversions: 0, requests_per_minute: values.rpm, result_ttl_hours: 24,
        });
        assert.equal(timeLimits.office, values.officeLimit);
        assert.deepEqual(got.body.engine_time, {
          allowance_seconds: values.enginePerHour, used_seconds: 0, remaining_seconds: values.enginePerHour, resets_at: nextHourStart(),
        });
        assert.equal(got.headers.get('ratelimit-limit'), String(values.rpm));
      });
    }

    it('a plan change through `convd accounts update` shows at once', async () => {
      const client = await newAccount(daemon, 'free');
      const updated = await convdAdmin(daemon.dataDir, ['accounts', 'update', client.accountId, '--plan', 'pro', '--json']);
      assert.equal(updated.code, 0, updated.stderr);
      const got = (await getAccount(client)).body;
      assert.deepEqual(got.plan, { id: 'pro', name: 'Pro' });
      assert.equal(got.credits.type, 'plan_credits');
      assert.equal(got.credits.remaining, 5000);
      assert.equal(got.limits.requests_per_minute, 600);
      const credits = await convdAdmin(daemon.dataDir, ['accounts', 'update', client.accountId, '--credits', '7', '--json']);
      assert.equal(credits.code, 0, credits.stderr);
      assert.equal((credits.json as { credits: { remaining: number } }).credits.remaining, 7);
      assert.equal((await getAccount(client)).body.credits.remaining, 7);
    });

    it('the balance resets to the allowance when resets_at has passed', async () => {
      const free = accounts.free!;
      const lite = accounts.lite!;
      // Move the free account into a period long gone, with 3 credits left then; the lite account
      // keeps its period but gets 3 credits too (the control: the edit itself takes effect).
      await daemon.stop();
      await editStoreFile<{ accounts: { id: string; resets_at: string; credits_base: number; credits_base_at: string }[] }>(join(daemon.dataDir, 'store', 'main'), (main) => {
        const oldFree = main.accounts.find((a) => a.id === free.accountId)!;
        Object.assign(oldFree, { resets_at: '2020-02-01T00:00:00.000Z', credits_base: 3, credits_base_at: '2020-01-15T00:00:00.000Z' });
        main.accounts.find((a) => a.id === lite.accountId)!.credits_base = 3;
      });
      daemon = await daemon.restart();
      free.baseUrl = daemon.baseUrl;
      lite.baseUrl = daemon.baseUrl;

      const got = (await getAccount(free)).body;
      assert.equal(got.credits.remaining, 100, 'a new period starts with the whole allowance');
      assert.equal(got.credits.resets_at, nextMonthStart());
      const control = (await getAccount(lite)).body;
      assert.equal(control.credits.remaining, 3);
      assert.equal(control.credits.resets_at, nextMonthStart());
      // Charges of the new period count against it.
      const made = await submitFile(free, { target: 'webp', wait: '20' }, { data: await png(8, 8), name: 'a.png' });
      assert.equal(made.body.credits, 1);
      assert.equal((await getAccount(free)).body.credits.remaining, 99);
    });
  });
});
