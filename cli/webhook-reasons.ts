/** Why a webhook delivery is rejected, for `conv webhook verify` and `conv webhook listen`. */
export const WEBHOOK_REJECTIONS: Readonly<Record<string, string>> = {
  malformed_header: 'the X-Service-Signature header is missing or not of the form t=<unix time>,v1=<hex>',
  bad_signature: 'the signature does not match the body and secret',
  stale_timestamp: 'the signature is valid but its timestamp is too old (a replay?)',
  future_timestamp: 'the signature is valid but its timestamp lies too far in the future (check the clocks)',
  malformed_body: 'the signed body is not JSON',
  body_too_large: 'the body is larger than 1 MiB',
};
