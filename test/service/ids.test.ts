import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { conversionIdFloor, conversionIdTime, isConversionId, newConversionId } from '../../src/model/ids.ts';

describe('conversion ids', () => {
  it('are valid, unique and in creation order, within one millisecond too', () => {
    const ids = Array.from({ length: 5000 }, (_, i) => newConversionId(1_700_000_000_000 + Math.floor(i / 100)));
    for (const id of ids) assert.ok(isConversionId(id), id);
    assert.equal(new Set(ids).size, ids.length);
    assert.deepEqual([...ids].sort(), ids);
    assert.equal(conversionIdTime(ids[0]!), 1_700_000_000_000);
    assert.ok(ids[0]! >= conversionIdFloor(1_700_000_000_000));
  });

  it('draw their random part from every character of the alphabet, anew in each millisecond', () => {
    // Each millisecond starts a fresh random part (the ids after it in that millisecond count up).
    const randomParts = Array.from({ length: 2000 }, (_, i) => newConversionId(1_800_000_000_000 + i * 7).slice(14));
    assert.equal(new Set(randomParts).size, randomParts.length);
    const seen = new Map<string, number>();
    for (const part of randomParts) for (const char of part) seen.set(char, (seen.get(char) ?? 0) + 1);
    assert.equal(seen.size, 32);
    // 32,000 characters: each of the 32 expected about 1,000 times; a skewed draw would be far off.
    for (const [char, count] of seen) assert.ok(count > 800 && count < 1200, `${char} drawn ${count} times`);
  });
});
