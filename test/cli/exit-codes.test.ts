import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EXIT, exitCodeForApiError, exitCodeForStatus } from '../../cli/exit-codes.ts';
import { ERROR_STATUS, type ApiErrorCode } from '../../src/errors/codes.ts';
import { describeError } from '../../cli/report.ts';
import { CliError } from '../../cli/errors.ts';
import { ClientError } from '../../src/client/types.ts';

/** The exit codes docs/cli.md documents, from API error codes, HTTP statuses and end states. */

describe('exit codes', () => {
  it('are the numbers docs/cli.md documents', () => {
    assert.deepEqual(EXIT, { ok: 0, error: 1, usage: 2, auth: 3, notFound: 4, conversionFailed: 5, waitTimeout: 6, limits: 7, credits: 8 });
  });

  it('map every API error code the service answers with', () => {
    // Every code the service has must be listed here: a new code fails this test until mapped.
    const expected: Record<string, number> = {
      unauthenticated: 3, forbidden: 3, not_found: 4, validation_failed: 2, unsupported_conversion: 2,
      file_too_large: 7, insufficient_credits: 8, free_quota_exhausted: 8, rate_limited: 7, concurrency_limit: 7, engine_time_exhausted: 7,
      idempotency_conflict: 1, not_ready: 1, invalid_state: 1, expired: 4, method_not_allowed: 1,
      unsupported_media_type: 1, internal_error: 1, api_disabled: 1, request_timeout: 1,
    };
    for (const [code, status] of Object.entries(ERROR_STATUS) as [ApiErrorCode, number][]) {
      assert.notEqual(expected[code], undefined, `${code} has an expected exit code`);
      assert.equal(exitCodeForApiError(code, status), expected[code], code);
    }
  });

  it('fall back to the HTTP status for codes they do not know (a proxy, another server)', () => {
    assert.equal(exitCodeForApiError('http_error', 401), 3);
    assert.equal(exitCodeForApiError('http_error', 404), 4);
    assert.equal(exitCodeForApiError('http_error', 413), 7);
    assert.equal(exitCodeForApiError('http_error', 429), 7);
    assert.equal(exitCodeForApiError('http_error', 402), 8);
    assert.equal(exitCodeForApiError('http_error', 502), 1);
    assert.equal(exitCodeForApiError('network_error', null), 1);
  });

  it('map end states reached while waiting', () => {
    assert.equal(exitCodeForStatus('succeeded'), 0);
    assert.equal(exitCodeForStatus('failed'), 5);
    assert.equal(exitCodeForStatus('cancelled'), 5);
    assert.equal(exitCodeForStatus('expired'), 4);
    assert.equal(exitCodeForStatus('processing'), 6);
  });

  it('describeError reports code, message and exit for every kind of error', () => {
    assert.deepEqual(describeError(new ClientError('insufficient_credits', 'costs 4, 1 left', 402)), {
      code: 'insufficient_credits', message: 'costs 4, 1 left', hint: 'see `conv account` for the balance and when it resets', exit: 8,
    });
    assert.deepEqual(describeError(new CliError(6, 'wait_timeout', 'still processing')), { code: 'wait_timeout', message: 'still processing', hint: undefined, exit: 6 });
    const disk = Object.assign(new Error('no space left'), { code: 'ENOSPC' });
    assert.deepEqual(describeError(disk), { code: 'enospc', message: 'no space left', exit: 1 });
  });
});
