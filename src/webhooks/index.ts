/**
 * The receiver-side API, exported from the package (`import { verifyWebhook } from 'convd/webhooks'`)
 * for receivers written in Node. Only pure functions: importing it starts nothing and pulls in no
 * HTTP client.
 */
export {
  DEFAULT_TOLERANCE_SECONDS,
  generateWebhookSecret,
  signWebhook,
  verifyWebhook,
  type VerifyFailureReason,
  type VerifyOptions,
  type VerifyResult,
} from './signature.ts';
