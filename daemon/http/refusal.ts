import { ApiError } from '../../src/errors/api-error.ts';

/** Why submissions are refused for now (503 api_disabled), or null. */
export type SubmissionRefusal = { reason: 'low_disk_space' | 'shutting_down'; retryAfter: number } | null;

export function refusalError(refusal: NonNullable<SubmissionRefusal>): ApiError {
  return new ApiError('api_disabled', {
    params: { reason: refusal.reason, retry_after: refusal.retryAfter },
    details: { reason: refusal.reason },
    headers: { 'Retry-After': String(refusal.retryAfter) },
  });
}
