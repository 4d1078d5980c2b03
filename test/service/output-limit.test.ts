import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConversionFailure } from '../../src/errors/api-error.ts';
import { outputCapFailure } from '../../src/engines/output-cap.ts';
import { DEFAULT_PLANS } from '../../src/model/plan.ts';
import { explainOutputCap, outputLimit, outputLimitFailure, withinRoom } from '../../src/service/output-limit.ts';

const MIB = 1024 * 1024;
const free = DEFAULT_PLANS.free;

describe('output limit', () => {
  it('is the ratio times the input, never below the floor, never above the plan', () => {
    assert.deepEqual(outputLimit(free, 10 * MIB, 50, 64), { bytes: 500 * MIB, rule: '50 times the input, at least 64 MB' });
    assert.deepEqual(outputLimit(free, 100 * 1024, 50, 64), { bytes: 64 * MIB, rule: '50 times the input, at least 64 MB' });
    assert.deepEqual(outputLimit(free, null, 50, 64), { bytes: 64 * MIB, rule: '50 times the input, at least 64 MB' });
    assert.deepEqual(outputLimit(free, 90 * MIB, 50, 64), { bytes: free.max_output_mb * MIB, rule: 'at most 1000 MB on the Free plan' });
  });

  it('the room left above the disk floor caps it when that is less, and says so', () => {
    const limit = outputLimit(free, MIB, 50, 64);
    assert.equal(withinRoom(limit, Infinity), limit);
    assert.equal(withinRoom(limit, 100 * MIB), limit);
    assert.deepEqual(withinRoom(limit, 10.5 * MIB), { bytes: 10.5 * MIB, rule: "the room left on the server's disk" });
    assert.equal(withinRoom(limit, -5).bytes, 0);
  });

  it('a ratio of 0 leaves the plan cap alone', () => {
    assert.deepEqual(outputLimit(free, 1, 0, 64), { bytes: 1000 * MIB, rule: 'at most 1000 MB on the Free plan' });
  });

  it("an engine's own cap failure is re-told with the rule; other errors pass as they are", () => {
    const limit = outputLimit(free, MIB, 2, 1);
    const told = explainOutputCap(outputCapFailure(limit.bytes), limit);
    assert.ok(told instanceof ConversionFailure);
    assert.equal(told.message, 'The result would be larger than its limit of 2 MB (2 times the input, at least 1 MB).');
    const other = new ConversionFailure('conversion_failed', 'The result would be nice.');
    assert.equal(explainOutputCap(other, limit), other);
    assert.equal(outputLimitFailure(limit, 3.5 * MIB).message, 'The result (3.5 MB) is larger than its limit of 2 MB (2 times the input, at least 1 MB).');
  });
});
