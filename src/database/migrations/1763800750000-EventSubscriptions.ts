import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * MCP Events webhook mode (docs/decisions.md, "Event subscriptions ride on endpoint rows"): an
 * `events/subscribe` subscription is a row of its own (`event_subscriptions`: who subscribed
 * through which credential, the event name, its arguments and filters, when it expires) joined
 * one to one to a webhook_endpoints row of purpose `event_subscription`, which carries what the
 * delivery engine already reads (URL, the client's sealed secret, kind, mode, status and failure
 * counts). Deliveries, attempts, retries, auto-disable and the log then need no second table.
 * Endpoints of that purpose are hidden from every webhook tool and page and from the endpoint cap.
 */
export class EventSubscriptions1763800750000 implements MigrationInterface {
  name = 'EventSubscriptions1763800750000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `ALTER TABLE webhook_endpoints ADD COLUMN purpose text NOT NULL DEFAULT 'webhook'
         CONSTRAINT webhook_endpoints_purpose_check CHECK (purpose IN ('webhook', 'event_subscription'))`,
    );
    await q.query(
      `CREATE TABLE event_subscriptions (
         id text PRIMARY KEY CONSTRAINT event_subscriptions_id_check CHECK (id ~ '^sub_[0-9a-f]{32}$'),
         endpoint_id uuid NOT NULL CONSTRAINT event_subscriptions_endpoint_id_fkey REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
         key_id uuid NOT NULL,
         name text NOT NULL,
         arguments jsonb NOT NULL,
         scope text NOT NULL CONSTRAINT event_subscriptions_scope_check CHECK (scope ~ '^[0-9a-f]{16}$'),
         line_id uuid,
         thread text,
         direction text,
         label text,
         expires_at timestamptz NOT NULL,
         created_at timestamptz NOT NULL DEFAULT now(),
         updated_at timestamptz NOT NULL DEFAULT now()
       )`,
    );
    await q.query(`CREATE UNIQUE INDEX event_subscriptions_endpoint_key ON event_subscriptions (endpoint_id)`);
    await q.query(`CREATE INDEX event_subscriptions_key_idx ON event_subscriptions (key_id)`);
    await q.query(`CREATE INDEX event_subscriptions_expires_idx ON event_subscriptions (expires_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DELETE FROM webhook_endpoints WHERE purpose = 'event_subscription'`);
    await q.query(`DROP TABLE IF EXISTS event_subscriptions`);
    await q.query(`ALTER TABLE webhook_endpoints DROP COLUMN IF EXISTS purpose`);
  }
}
