export {
  DEFAULT_TOLERANCE_SECONDS,
  SIGNATURE_HEADER,
  SIGNATURE_SCHEME,
  WebhookVerificationError,
  parseSignatureHeader,
  signWebhook,
  verifyWebhook,
} from './verify-webhook';
export type { ParsedSignatureHeader, RawBody, VerifyWebhookOptions, WebhookEnvelope, WebhookMode, WebhookVerificationErrorCode } from './verify-webhook';
