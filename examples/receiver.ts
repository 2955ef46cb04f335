/**
 * Example webhook receiver (Express).
 *
 *   WEBHOOK_SECRETS=<newest>,<previous> RECEIVER_PORT=4000 npx ts-node examples/receiver.ts
 *
 * RECEIVER_PORT (default 4000) is the receiver's own port: the service itself listens on 3000.
 * In development the service delivers to loopback addresses, so register
 * http://127.0.0.1:4000/webhooks with register_webhook.
 *
 * WEBHOOK_SECRETS: the endpoint secrets, comma-separated, newest first. Each is the 64-character hex
 * string returned by register_webhook / rotate_webhook_secret, used as-is (not hex-decoded). After
 * a rotation, list the new secret first and keep the previous one for the 24 h overlap.
 *
 * What it shows:
 * - the signature is checked on the raw body bytes (`express.raw`), before anything parses them;
 *   a global `express.json()` in front of this route would make verification impossible;
 * - any verification failure answers 400 and logs the error code;
 * - deliveries are de-duplicated on the envelope `id` (retries reuse it);
 * - the answer (200) goes out at once and the event is handled afterwards: the service counts
 *   anything but a 2xx within 10 s as a failure and retries.
 */
import express, { type Request, type Response } from 'express';
import { SIGNATURE_HEADER, WebhookVerificationError, verifyWebhook, type WebhookEnvelope } from '../src/sdk';

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

export function parseSecrets(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((secret) => secret.trim())
    .filter((secret) => secret !== '');
}

export function createReceiverApp(options: { secrets: string[]; handleEvent: EventHandler; seen?: RecentIds }): express.Express {
  const { secrets, handleEvent } = options;
  const seen = options.seen ?? new RecentIds();
  const app = express();

  app.post(
    '/webhooks',
    // Raw bytes for this route only. The limit is generous: verbose payloads carry message history.
    express.raw({ type: 'application/json', limit: '5mb' }),
    (req: Request, res: Response) => {
      // express.raw leaves req.body unset when the Content-Type is not application/json.
      if (!Buffer.isBuffer(req.body)) {
        res.status(415).json({ error: 'expected application/json' });
        return;
      }

      let event: WebhookEnvelope;
      try {
        event = verifyWebhook(req.body, req.get(SIGNATURE_HEADER), secrets);
      } catch (error) {
        if (error instanceof WebhookVerificationError) {
          console.warn(`webhook rejected: ${error.code} (${error.message})`);
          res.status(400).json({ error: error.code });
          return;
        }
        throw error; // a bug here, not a bad request: Express answers 500 and the service retries
      }

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
  const secrets = parseSecrets(process.env.WEBHOOK_SECRETS);
  if (secrets.length === 0) {
    console.error('WEBHOOK_SECRETS is not set (comma-separated secrets, newest first)');
    process.exit(1);
  }
  const port = Number(process.env.RECEIVER_PORT ?? 4000);
  createReceiverApp({ secrets, handleEvent }).listen(port, () => {
    console.info(`webhook receiver listening on http://127.0.0.1:${port}/webhooks`);
  });
}
