import { SIGNATURE_HEADER, signStandardWebhook, signWebhook, STANDARD_HEADERS } from '../sdk';
import { DeliverySigning } from '../webhooks/webhooks.service';

/**
 * The signature headers of one attempt: Standard Webhooks' `webhook-id` (the envelope's id, the
 * same on every retry), `webhook-timestamp` and `webhook-signature`, and the legacy
 * `X-Service-Signature` with the same timestamp unless the endpoint turned it off. The keys are
 * any bytes (an endpoint's secrets and key pairs, or another sender's `whsec_` secret), so every
 * delivery path signs through here.
 */
export function signatureHeaders(body: string, webhookId: string, timestamp: number, signing: DeliverySigning): Record<string, string> {
  const headers: Record<string, string> = {
    [STANDARD_HEADERS.id]: webhookId,
    [STANDARD_HEADERS.timestamp]: String(timestamp),
    [STANDARD_HEADERS.signature]: signStandardWebhook(body, webhookId, timestamp, signing.standardKeys),
  };
  if (signing.legacySecrets.length > 0) headers[SIGNATURE_HEADER.toLowerCase()] = signWebhook(body, signing.legacySecrets, timestamp);
  return headers;
}
