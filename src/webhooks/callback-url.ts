/**
 * The scheme rule for callback URLs (spec: "https only"), shared by submission (422) and delivery.
 * Addresses are not checked here: a name can resolve elsewhere later, so the SSRF guard runs at
 * delivery time on the address actually connected to (see transport.ts).
 */

export type CallbackUrlProblem = 'invalid_url' | 'https_required';

export interface CallbackUrlPolicy {
  /** Test-only daemon flag: also accept http (private addresses are then allowed by the transport). */
  allowInsecure: boolean;
}

export function checkCallbackUrl(url: string, policy: CallbackUrlPolicy): CallbackUrlProblem | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'invalid_url';
  }
  if (parsed.protocol === 'https:') return null;
  if (parsed.protocol === 'http:' && policy.allowInsecure) return null;
  return 'https_required';
}
