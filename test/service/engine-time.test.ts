/**
 * Time is a budget: a plan's time limit per engine kind ends a conversion at the plan's limit (not
 * the engine's), every conversion draws on its account's engine time of the hour whether it
 * succeeds or fails, and past the allowance a submission gets 429 engine_time_exhausted with
 * Retry-After, shown on GET /v1/account; the next hour starts again from nothing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ApiError } from '../../src/errors/api-error.ts';
import { DEFAULT_PLANS } from '../../src/model/plan.ts';
import { newConversionId } from '../../src/model/ids.ts';
import { checkSubmissionLimits, engineTimeUse } from '../../src/service/submission-limits.ts';
import { LowdbStore } from '../../src/store/lowdb-store.ts';
import { assertError, call, getAccount, newAccount, submitFile, waitForEnd } from '../helpers/api-support.ts';
import { HOSTILE_POSTSCRIPT } from '../helpers/postscript.ts';
import { account, conversion } from '../helpers/store-records.ts';
import { startDaemon, type DaemonHandle } from '../helpers/daemon.ts';

const HOUR = 3_600_000;
const NO_HOLDS = { places: 0, credits: 0 };

describe('engine time per hour (the service\'s rule)', () => {
  it('counts this hour\'s conversions, refuses past the allowance until the next hour', async () => {
    const store = await LowdbStore.open({ dir: null });
    const plan = { ...DEFAULT_PLANS.free, engine_seconds_per_hour: 10 };
    const owner = account('acc_budget', new Date().toISOString());
    await store.putAccount(owner);
    // 10:20 in some hour: conversions of 10:05 and 10:15 used 10 s; one of 09:50 does not count.
    const hour = Math.floor(Date.now() / HOUR) * HOUR - 5 * HOUR;
    const now = hour + 20 * 60_000;
    const at = (ms: number, engineMs: number) => conversion(owner.id, { id: newConversionId(ms), created_at: new Date(ms).toISOString(), status: 'failed', engine_ms: engineMs });
    for (const record of [at(hour - 10 * 60_000, 60_000), at(hour + 5 * 60_000, 4500), at(hour + 15 * 60_000, 5500)]) await store.insertConversion(record);

    const use = await engineTimeUse(store, owner.id, plan, now);
    assert.deepEqual(use, { allowance_seconds: 10, used_seconds: 10, remaining_seconds: 0, resets_at: new Date(hour + HOUR).toISOString() });
    const refused = await checkSubmissionLimits(store, owner, plan, 1, NO_HOLDS, now).then(() => null, (error: unknown) => error);
    assert.ok(refused instanceof ApiError, String(refused));
    assert.equal(refused.code, 'engine_time_exhausted');
    assert.equal(refused.status, 429);
    assert.equal(refused.headers['Retry-After'], String(40 * 60));
    assert.deepEqual(refused.details, { limit: 'engine_seconds_per_hour', engine_seconds_per_hour: 10, used_seconds: 10, resets_at: use.resets_at });

    // The next hour starts from nothing; an unlimited plan (0) is never refused.
    await checkSubmissionLimits(store, owner, plan, 1, NO_HOLDS, hour + HOUR + 1000);
    assert.equal((await engineTimeUse(store, owner.id, plan, hour + HOUR + 1000)).used_seconds, 0);
    await checkSubmissionLimits(store, owner, { ...plan, engine_seconds_per_hour: 0 }, 1, NO_HOLDS, now);
    await store.close();
  });
});

describe('engine time per hour through the daemon', { timeout: 120_000 }, () => {
  let daemon: DaemonHandle;

  before(async () => {
    // The free plan's PostScript limit 2 s (the engine's own stays 2 min), 3 s of engine time an hour.
    daemon = await startDaemon({ args: ['--plan', 'free.time_limits.postscript=2', '--plan', 'free.engine_seconds_per_hour=3'] });
  });
  after(async () => {
    await daemon?.stop();
  });

  it('a loop ends at the plan\'s limit, its time is drawn though it failed, and past the allowance a submission is 429 until the hour ends', async () => {
    const client = await newAccount(daemon, 'free');
    const fresh = (await getAccount(client)).body;
    assert.equal(fresh.limits.time_limits.postscript, 2);
    assert.equal(fresh.limits.time_limits.office, DEFAULT_PLANS.free.time_limits.office);
    assert.deepEqual([fresh.engine_time.allowance_seconds, fresh.engine_time.used_seconds, fresh.engine_time.remaining_seconds], [3, 0, 3]);

    const loop = { data: Buffer.from(HOSTILE_POSTSCRIPT.loops), name: 'loop.ps' };
    for (let turn = 0; turn < 2; turn++) {
      const sent = await submitFile(client, { target: 'pdf' }, loop);
      assert.ok(sent.status === 201 || sent.status === 202, JSON.stringify(sent.body));
      const ended = await waitForEnd(client, sent.body.id);
      assert.equal(ended.error?.code, 'timeout', JSON.stringify(ended));
      assert.match(ended.error!.message, /limit of 2 s/);
      const took = Date.parse(ended.finished_at!) - Date.parse(ended.started_at!);
      assert.ok(took < 20_000, `ended after ${took} ms, at the plan's 2 s rather than the engine's 2 min`);
    }
    const used = (await getAccount(client)).body.engine_time;
    assert.ok(used.used_seconds >= 3, JSON.stringify(used));
    assert.equal(used.remaining_seconds, 0);

    const refused = await submitFile(client, { target: 'pdf' }, loop, { 'accept-language': 'de' });
    const error = assertError(refused, 429, 'engine_time_exhausted');
    assert.match(error.message, /Rechenzeit/);
    const retryAfter = Number(refused.headers.get('retry-after'));
    const secondsToHour = Math.ceil((Date.parse(used.resets_at) - Date.now()) / 1000);
    assert.ok(retryAfter >= 1 && Math.abs(retryAfter - secondsToHour) <= 5, `Retry-After ${retryAfter}, ${secondsToHour} s to the hour`);

    // Another account of the same plan has its own hour.
    const other = await newAccount(daemon, 'free');
    assert.equal((await getAccount(other)).body.engine_time.used_seconds, 0);
    const listed = await call(other, '/conversions');
    assert.equal(listed.status, 200);
  });
});
