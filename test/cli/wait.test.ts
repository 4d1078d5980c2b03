import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ConvClient } from '../../src/client/types.ts';
import type { PublicConversion } from '../../src/model/conversion.ts';
import type { ConversionStatus } from '../../src/model/status.ts';
import { nextWait, waitForEnd } from '../../cli/wait.ts';

/** Waiting past the API's 30 s: repeated `wait=N` requests, never past the deadline. */

function conversion(status: ConversionStatus): PublicConversion {
  return { id: 'cnv_1', status } as PublicConversion;
}

/** A client whose getConversion answers from a script and advances a fake clock by the wait it was asked for. */
function scripted(statuses: ConversionStatus[], clock: { now: number }, holds = true): { client: ConvClient; waits: number[] } {
  const waits: number[] = [];
  const client = {
    async getConversion(_id: string, options: { wait?: number } = {}) {
      waits.push(options.wait ?? 0);
      const status = statuses.shift() ?? 'processing';
      if (holds && !['succeeded', 'failed', 'cancelled', 'expired'].includes(status)) clock.now += (options.wait ?? 0) * 1000;
      return conversion(status);
    },
  } as unknown as ConvClient;
  return { client, waits };
}

describe('waitForEnd', () => {
  it('repeats wait=30 until the end state when there is no limit', async () => {
    const clock = { now: 0 };
    const { client, waits } = scripted(['processing', 'processing', 'succeeded'], clock);
    const result = await waitForEnd(client, conversion('queued'), { deadline: Infinity, pollSeconds: 30, now: () => clock.now });
    assert.equal(result.timedOut, false);
    assert.equal(result.conversion.status, 'succeeded');
    assert.deepEqual(waits, [30, 30, 30]);
  });

  it('never asks to be held past the deadline, and reports running out', async () => {
    const clock = { now: 0 };
    const { client, waits } = scripted([], clock);
    const result = await waitForEnd(client, conversion('queued'), { deadline: 75_000, pollSeconds: 30, now: () => clock.now });
    assert.equal(result.timedOut, true);
    assert.equal(result.conversion.status, 'processing');
    assert.deepEqual(waits, [30, 30, 15]);
  });

  it('returns at once for a conversion that already ended', async () => {
    const clock = { now: 0 };
    const { client, waits } = scripted([], clock);
    const result = await waitForEnd(client, conversion('failed'), { deadline: 0, pollSeconds: 30, now: () => clock.now });
    assert.deepEqual([result.timedOut, waits], [false, []]);
  });

  it('paces a server that ignores wait instead of spinning', async () => {
    const { client, waits } = scripted([], { now: 0 }, false);
    const started = Date.now();
    const result = await waitForEnd(client, conversion('queued'), { deadline: started + 2500, pollSeconds: 30 });
    assert.equal(result.timedOut, true);
    assert.ok(waits.length <= 4, `${waits.length} requests in 2.5 s`);
  });

  it('nextWait rounds up, stays within 1..poll', () => {
    assert.equal(nextWait(Infinity, 30, 0), 30);
    assert.equal(nextWait(10_500, 30, 0), 11);
    assert.equal(nextWait(100, 30, 0), 1);
    assert.equal(nextWait(60_000, 1, 0), 1);
  });
});
