/** What the engine suites expect of a failing conversion: a ConversionFailure with this code. */
import assert from 'node:assert/strict';
import { ConversionFailure } from '../../src/errors/api-error.ts';

export async function rejectsWith(promise: Promise<unknown>, code: string): Promise<ConversionFailure> {
  let caught: unknown;
  await promise.then(() => undefined, (error: unknown) => (caught = error));
  assert.ok(caught instanceof ConversionFailure, `expected ConversionFailure(${code}), got ${String(caught)}`);
  assert.equal(caught.code, code, caught.message);
  return caught;
}
