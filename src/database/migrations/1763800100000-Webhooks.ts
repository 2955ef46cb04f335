import { MigrationInterface, QueryRunner } from 'typeorm';

const EVENT_KINDS = `ARRAY['message.received','message.sent','message.status_changed','thread.created','email.opened',
  'attachment.extracted','contact.merged','email_account.health_changed','agent_turn.awaiting_approval','agent_turn.sent']`;

export class Webhooks1763800100000 implements MigrationInterface {
  name = 'Webhooks1763800100000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE webhook_endpoints (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
        url text NOT NULL CHECK (length(url) <= 2048 AND url ~ '^https?://'),
        events text[] NOT NULL CHECK (cardinality(events) > 0 AND events <@ ${EVENT_KINDS}),
        mode text NOT NULL CHECK (mode IN ('concise', 'verbose')),
        message_history_count integer NOT NULL CHECK (message_history_count BETWEEN 0 AND 50),
        status text NOT NULL CHECK (status IN ('active', 'disabled')),
        all_channels boolean NOT NULL,
        secret_sealed text NOT NULL,
        previous_secret_sealed text,
        previous_secret_expires_at timestamptz,
        consecutive_failures integer NOT NULL DEFAULT 0 CHECK (consecutive_failures >= 0),
        failing_since timestamptz,
        disabled_reason text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CHECK ((previous_secret_sealed IS NULL) = (previous_secret_expires_at IS NULL))
      )`);
    await q.query(`CREATE INDEX webhook_endpoints_user_idx ON webhook_endpoints (user_id, created_at)`);
    await q.query(`CREATE INDEX webhook_endpoints_org_active_idx ON webhook_endpoints (org_id) WHERE status = 'active'`);
    await q.query(`
      CREATE TABLE webhook_endpoint_channels (
        endpoint_id uuid NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
        line_id uuid NOT NULL REFERENCES lines(id) ON DELETE CASCADE,
        channel_type text NOT NULL CHECK (channel_type IN ('EMAIL_ACCOUNT', 'PHONE_NUMBER')),
        PRIMARY KEY (endpoint_id, line_id)
      )`);
    await q.query(`CREATE INDEX webhook_endpoint_channels_line_idx ON webhook_endpoint_channels (line_id)`);
    // data is json, not jsonb: it is only stored and sent, and json keeps the key order of the payload.
    await q.query(`
      CREATE TABLE webhook_deliveries (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        event_id text NOT NULL CHECK (event_id ~ '^evt_[0-9a-f]{32}$'),
        endpoint_id uuid NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
        user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        source_event_id bigint,
        resent_from_id uuid REFERENCES webhook_deliveries(id) ON DELETE SET NULL,
        event_type text NOT NULL CHECK (event_type = ANY (${EVENT_KINDS})),
        mode text NOT NULL CHECK (mode IN ('concise', 'verbose')),
        data json NOT NULL,
        event_created_at timestamptz NOT NULL,
        status text NOT NULL CHECK (status IN ('pending', 'retrying', 'succeeded', 'failed', 'cancelled')),
        attempt_count integer NOT NULL DEFAULT 0 CHECK (attempt_count >= 0),
        last_status_code integer,
        last_error text,
        last_attempt_at timestamptz,
        next_attempt_at timestamptz,
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE UNIQUE INDEX webhook_deliveries_event_id_key ON webhook_deliveries (event_id)`);
    await q.query(`CREATE UNIQUE INDEX webhook_deliveries_source_endpoint_key ON webhook_deliveries (source_event_id, endpoint_id)
                   WHERE source_event_id IS NOT NULL AND resent_from_id IS NULL`);
    await q.query(`CREATE INDEX webhook_deliveries_endpoint_page_idx ON webhook_deliveries (endpoint_id, created_at DESC, id DESC)`);
    await q.query(`
      CREATE TABLE webhook_delivery_attempts (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        delivery_id uuid NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
        attempt_number integer NOT NULL CHECK (attempt_number >= 1),
        attempted_at timestamptz NOT NULL,
        duration_ms integer NOT NULL CHECK (duration_ms >= 0),
        status_code integer,
        error_kind text,
        response_body text CHECK (octet_length(response_body) <= 2048),
        UNIQUE (delivery_id, attempt_number)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const table of ['webhook_delivery_attempts', 'webhook_deliveries', 'webhook_endpoint_channels', 'webhook_endpoints']) {
      await q.query(`DROP TABLE IF EXISTS ${table}`);
    }
  }
}
