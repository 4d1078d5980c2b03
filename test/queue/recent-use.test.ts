/**
 * RecentUse keeps each account's sums as runs come and age out: what it says must match summing
 * the window's runs afresh, over thousands of runs (the front of the list compacted on the way),
 * and an account whose runs all aged out is forgotten.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { QUICK_RUN_MS, RecentUse, WINDOW_MS } from '../../src/queue/recent-use.ts';

const LIGHT_MS = 10_000;
/** The first test's threshold: its busy phases cross it, its quiet ones fall back under it. */
const PHASED_LIGHT_MS = 20_000;

describe('RecentUse', () => {
  it('says what summing the window afresh says, run after run, as runs age out', () => {
    let now = 0;
    const recent = new RecentUse(PHASED_LIGHT_MS, () => now);
    const seen = { light: 0, heavy: 0, quickOnly: 0, slow: 0 };
    const all: { account: string; at: number; ms: number }[] = [];
    // A fixed sequence (no randomness): mostly quick runs, a slow one now and then, two accounts,
    // in busy and quiet phases.
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
    for (let step = 0; step < 12_000; step++) {
      now += step % 4000 < 2000 ? next() % 60 : 100 + (next() % 400);
      const account = step % 3 === 0 ? 'B' : 'A';
      const ms = step % 997 === 0 ? QUICK_RUN_MS + 500 : 1 + (next() % 40);
      recent.record(account, ms);
      all.push({ account, at: now, ms });
      if (step % 7 === 0) {
        for (const who of ['A', 'B', 'C']) {
          const window = all.filter((run) => run.account === who && run.at >= now - WINDOW_MS);
          const total = window.reduce((sum, run) => sum + run.ms, 0);
          const quickOnly = total <= PHASED_LIGHT_MS && window.every((run) => run.ms <= QUICK_RUN_MS);
          assert.equal(recent.isLight(who), total <= PHASED_LIGHT_MS, `${who} at step ${step}: total ${total}`);
          assert.equal(recent.onlyQuickRuns(who), quickOnly, `${who} at step ${step}`);
          seen[total <= PHASED_LIGHT_MS ? 'light' : 'heavy'] += 1;
          if (total <= PHASED_LIGHT_MS) seen[quickOnly ? 'quickOnly' : 'slow'] += 1;
        }
        assert.deepEqual(recent.heavy().sort(), ['A', 'B'].filter((who) => !recent.isLight(who)));
      }
    }
    // The sequence reaches every answer often, or the comparisons above prove little.
    for (const [answer, count] of Object.entries(seen)) assert.ok(count > 100, `${answer} seen ${count} times`);
  });

  it('a slow run counts until it ages out; an account with nothing left is light again', () => {
    let now = 1_000_000;
    const recent = new RecentUse(LIGHT_MS, () => now);
    recent.record('S', QUICK_RUN_MS + 1);
    for (let i = 0; i < 3000; i++) {
      now += 50;
      recent.record('S', 1);
    }
    assert.equal(recent.isLight('S'), true);
    assert.equal(recent.onlyQuickRuns('S'), false, 'the slow run is 150 s old: still in the window');
    now += WINDOW_MS - 150_000 + 1;
    assert.equal(recent.onlyQuickRuns('S'), true, 'the slow run aged out, the quick ones partly');
    recent.record('H', LIGHT_MS + 1);
    assert.deepEqual(recent.heavy(), ['H']);
    now += WINDOW_MS + 1;
    assert.deepEqual(recent.heavy(), []);
    assert.equal(recent.isLight('H'), true);
    assert.equal(recent.onlyQuickRuns('S'), true);
  });
});
