/**
 * Example webhook receiver (Express) for all three signature forms: Standard Webhooks `v1`
 * (HMAC-SHA256) and `v1a` (ed25519) in `webhook-signature`, and the legacy `X-Service-Signature`.
 *
 *   WEBHOOK_KEYS=<newest>,<previous> RECEIVER_PORT=4000 npx ts-node examples/receiver.ts
 *   WEBHOOK_JWKS_URL=https://sync.example.com/webhooks/<endpointId>/jwks.json npx ts-node examples/receiver.ts
 *
 * RECEIVER_PORT (default 4000) is the receiver's own port: the service itself listens on 3000.
 * In development the service delivers to loopback addresses, so register
 * http://127.0.0.1:4000/webhooks with register_webhook.
 *
 * WEBHOOK_KEYS (WEBHOOK_SECRETS is read too): comma-separated, newest first, any of
 * - the 64-character hex `secret` of register_webhook / rotate_webhook_secret (used as-is, not
 *   hex-decoded), or its `whsec_` form (`signingSecret`): the same key; verifies v1 and legacy;
 * - a v1a endpoint's public key `whpk_...` (endpoint.publicKey): verifies v1a.
 * After a rotation, list the new one first and keep the previous one for the 24 h overlap.
 * WEBHOOK_JWKS_URL instead (or as well) fetches a v1a endpoint's public keys from its JWK Set, and
 * fetches them again (at most once a minute) when a delivery matches none of them: a rotation
 * needs no change on this side.
 *
 * What it shows:
 * - the signature is checked on the raw body bytes (`express.raw`), before anything parses them;
 *   a global `express.json()` in front of this route would make verification impossible;
 * - a request with `webhook-signature` is verified as Standard Webhooks, one without as legacy;
 * - any verification failure answers 400 and logs the error code;
 * - deliveries are de-duplicated on the envelope `id` (retries reuse it);
 * - the answer (200) goes out at once and the event is handled afterwards: the service counts
 *   anything but a 2xx within 10 s as a failure and retries.
 */
import type { KeyObject } from 'node:crypto';
import express, { type Request, type Response } from 'express';
import { publicKeyFromJwk, WebhookVerificationError, verifyWebhookRequest, type WebhookEnvelope } from '../src/sdk';

export type EventHandler = (event: WebhookEnvelope) => Promise<void> | void;

/**
 * Remembers the most recent event ids, forgetting the oldest beyond `capacity`. A Set iterates in
 * insertion order, so its first element is the oldest.
 *
 * In-memory only, for the example: it forgets everything on restart and is not shared between
 * replicas. In production, record the id under a database unique key (e.g. INSERT ... ON CONFLICT
 * (event_id) DO NOTHING, and skip when no row was inserted), in the same transaction as the work.
 */
export class RecentIds {
  private readonly ids = new Set<string>();

  constructor(private readonly capacity = 10_000) {}

  /** True when `id` is new (and now remembered); false when it was seen already. */
  add(id: string): boolean {
    if (this.ids.has(id)) return false;
    this.ids.add(id);
    if (this.ids.size > this.capacity) {
      const oldest = this.ids.values().next().value;
      if (oldest !== undefined) this.ids.delete(oldest);
    }
    return true;
  }
}

/** Comma-separated keys (hex or whsec_ secrets, whpk_ public keys), newest first. */
export function parseSecrets(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((secret) => secret.trim())
    .filter((secret) => secret !== '');
}

/**
 * A v1a endpoint's public keys from its JWK Set URL, fetched again on demand at most once per
 * `minIntervalMs` (a delivery that matches no key may mean the keys were rotated).
 */
export class JwksKeys {
  private keys: KeyObject[] = [];
  private fetchedAt = 0;

  constructor(
    private readonly url: string,
    private readonly minIntervalMs = 60_000,
  ) {}

  current(): KeyObject[] {
    return this.keys;
  }

  /** Fetches the set unless it was fetched less than `minIntervalMs` ago; answers whether the keys changed. */
  async refresh(): Promise<boolean> {
    if (Date.now() - this.fetchedAt < this.minIntervalMs) return false;
    this.fetchedAt = Date.now();
    const response = await fetch(this.url, { headers: { accept: 'application/jwk-set+json, application/json' } });
    if (!response.ok) throw new Error(`JWK Set ${this.url} answered ${response.status}`);
    const set = (await response.json()) as { keys?: Array<{ kty: string; crv: string; x: string }> };
    const before = this.keys.map((k) => k.export({ format: 'jwk' }).x).join();
    this.keys = (set.keys ?? []).map((jwk) => publicKeyFromJwk(jwk));
    return this.keys.map((k) => k.export({ format: 'jwk' }).x).join() !== before;
  }
}

export function createReceiverApp(options: { secrets: string[]; jwks?: JwksKeys; handleEvent: EventHandler; seen?: RecentIds }): express.Express {
  const { secrets, jwks, handleEvent } = options;
  const seen = options.seen ?? new RecentIds();
  const verify = (req: Request) => verifyWebhookRequest(req.body as Buffer, req.headers, [...secrets, ...(jwks?.current() ?? [])]);
  const app = express();

  app.post(
    '/webhooks',
    // Raw bytes for this route only. The limit is generous: verbose payloads carry message history.
    express.raw({ type: 'application/json', limit: '5mb' }),
    async (req: Request, res: Response) => {
      // express.raw leaves req.body unset when the Content-Type is not application/json.
      if (!Buffer.isBuffer(req.body)) {
        res.status(415).json({ error: 'expected application/json' });
        return;
      }

      let event: WebhookEnvelope;
      try {
        try {
          event = verify(req).envelope;
        } catch (error) {
          // Maybe the v1a keys were rotated (or not fetched yet): fetch the JWK Set once and try again.
          const retry =
            error instanceof WebhookVerificationError && ['SIGNATURE_MISMATCH', 'NO_SECRETS'].includes(error.code) && jwks && (await jwks.refresh());
          if (!retry) throw error;
          event = verify(req).envelope;
        }
      } catch (error) {
        if (error instanceof WebhookVerificationError) {
          console.warn(`webhook rejected: ${error.code} (${error.message})`);
          res.status(400).json({ error: error.code });
          return;
        }
        throw error; // a bug here, not a bad request: Express answers 500 and the service retries
      }

      // The envelope id is the webhook-id: retries reuse it, and a replay of a captured request has it too.
      if (!seen.add(event.id)) {
        console.info(`webhook ${event.id} (${event.type}) already received; acknowledged again`);
        res.status(200).json({ received: true, duplicate: true });
        return;
      }

      // Acknowledge first, work after. Once the 200 is sent the service will not retry, so a
      // production receiver should persist the event durably (a table or a queue) before
      // answering, and process it from there.
      res.status(200).json({ received: true });
      setImmediate(() => {
        Promise.resolve()
          .then(() => handleEvent(event))
          .catch((error: unknown) => console.error(`handling webhook ${event.id} (${event.type}) failed`, error));
      });
    },
  );

  return app;
}

/** Prints each verified event; a real receiver dispatches on `event.type` (docs/webhooks.md lists them all). */
async function handleEvent(event: WebhookEnvelope): Promise<void> {
  console.info(`verified ${event.type} ${event.id} (${event.mode}) for endpoint ${event.endpointId}`);
}

if (require.main === module) {
  const secrets = parseSecrets(process.env.WEBHOOK_KEYS ?? process.env.WEBHOOK_SECRETS);
  const jwks = process.env.WEBHOOK_JWKS_URL ? new JwksKeys(process.env.WEBHOOK_JWKS_URL) : undefined;
  if (secrets.length === 0 && !jwks) {
    console.error('set WEBHOOK_KEYS (comma-separated secrets or whpk_ public keys, newest first) or WEBHOOK_JWKS_URL');
    process.exit(1);
  }
  const port = Number(process.env.RECEIVER_PORT ?? 4000);
  void (jwks ? jwks.refresh() : Promise.resolve(false)).then(() =>
    createReceiverApp({ secrets, jwks, handleEvent }).listen(port, () => {
      console.info(`webhook receiver listening on http://127.0.0.1:${port}/webhooks`);
    }),
  );
}
