import { MigrationInterface, QueryRunner } from 'typeorm';

export class Messaging1763800300000 implements MigrationInterface {
  name = 'Messaging1763800300000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE lines ADD COLUMN sms_delivery_reports boolean NOT NULL DEFAULT true`);
    await q.query(`
      CREATE TABLE email_account_health (
        line_id uuid PRIMARY KEY REFERENCES lines(id) ON DELETE CASCADE,
        status text NOT NULL CHECK (status IN ('healthy', 'unhealthy')),
        error_kind text,
        error text,
        since timestamptz,
        last_synced_at timestamptz,
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE contacts (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
        display_name text,
        notes text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX contacts_org_idx ON contacts (org_id, created_at)`);
    await q.query(`
      CREATE TABLE identities (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
        kind text NOT NULL CHECK (kind IN ('PHONE', 'EMAIL')),
        value text NOT NULL,
        display_name text,
        contact_id uuid REFERENCES contacts(id) ON DELETE SET NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (org_id, kind, value)
      )`);
    await q.query(`CREATE INDEX identities_contact_idx ON identities (contact_id)`);
    await q.query(`
      CREATE TABLE threads (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
        line_id uuid NOT NULL REFERENCES lines(id) ON DELETE CASCADE,
        channel text NOT NULL CHECK (channel IN ('SMS', 'EMAIL')),
        partner_identity_id uuid NOT NULL REFERENCES identities(id),
        subject text,
        last_message_at timestamptz(3) NOT NULL,
        message_count integer NOT NULL DEFAULT 0 CHECK (message_count >= 0),
        created_at timestamptz(3) NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX threads_line_recent_idx ON threads (line_id, last_message_at DESC, id DESC)`);
    await q.query(`CREATE UNIQUE INDEX threads_sms_partner_key ON threads (line_id, partner_identity_id) WHERE channel = 'SMS'`);
    await q.query(`
      CREATE TABLE messages (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
        thread_id uuid NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
        line_id uuid NOT NULL REFERENCES lines(id) ON DELETE CASCADE,
        channel text NOT NULL CHECK (channel IN ('SMS', 'EMAIL')),
        direction text NOT NULL CHECK (direction IN ('INBOUND', 'OUTBOUND')),
        status text NOT NULL CHECK (status IN ('RECEIVED', 'QUEUED', 'SENT', 'DELIVERED', 'FAILED')),
        body text NOT NULL,
        html text,
        subject text,
        from_value text NOT NULL,
        from_kind text NOT NULL CHECK (from_kind IN ('PHONE', 'EMAIL')),
        to_value text NOT NULL,
        to_kind text NOT NULL CHECK (to_kind IN ('PHONE', 'EMAIL')),
        provider_message_id text,
        error text,
        read_receipt boolean NOT NULL DEFAULT false,
        tracking_token text UNIQUE,
        open_count integer NOT NULL DEFAULT 0,
        first_opened_at timestamptz(3),
        last_opened_at timestamptz(3),
        header_message_id text,
        header_in_reply_to text,
        header_references text[] NOT NULL DEFAULT '{}',
        header_list_unsubscribe text,
        auth_spf text,
        auth_dkim text,
        auth_dmarc text,
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        sent_at timestamptz(3)
      )`);
    await q.query(`CREATE INDEX messages_thread_idx ON messages (thread_id, created_at, id)`);
    await q.query(`CREATE UNIQUE INDEX messages_provider_key ON messages (line_id, direction, provider_message_id) WHERE provider_message_id IS NOT NULL`);
    await q.query(`CREATE INDEX messages_header_message_id_idx ON messages (line_id, header_message_id) WHERE header_message_id IS NOT NULL`);
    await q.query(`
      CREATE TABLE labels (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
        name text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
        UNIQUE (org_id, name)
      )`);
    await q.query(`
      CREATE TABLE thread_labels (
        thread_id uuid NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
        label_id uuid NOT NULL REFERENCES labels(id) ON DELETE CASCADE,
        confidence real NOT NULL DEFAULT 1 CHECK (confidence >= 0 AND confidence <= 1),
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (thread_id, label_id)
      )`);
    await q.query(`
      CREATE TABLE attachments (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
        message_id uuid NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
        filename text NOT NULL,
        mime_type text NOT NULL,
        size_bytes integer NOT NULL CHECK (size_bytes >= 0),
        content bytea NOT NULL,
        extraction_status text NOT NULL DEFAULT 'pending' CHECK (extraction_status IN ('pending', 'extracted', 'failed')),
        extracted_text text,
        text_length integer NOT NULL DEFAULT 0,
        extraction_error text,
        extracted_at timestamptz(3),
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX attachments_message_idx ON attachments (message_id)`);
    await q.query(`
      CREATE TABLE calendar_events (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        attachment_id uuid NOT NULL REFERENCES attachments(id) ON DELETE CASCADE,
        uid text NOT NULL,
        method text,
        status text,
        summary text,
        starts_at timestamptz,
        ends_at timestamptz,
        organizer_email text,
        attendee_emails text[] NOT NULL DEFAULT '{}'
      )`);
    await q.query(`CREATE INDEX calendar_events_attachment_idx ON calendar_events (attachment_id)`);
    await q.query(`
      CREATE TABLE email_opens (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        message_id uuid NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
        opened_at timestamptz(3) NOT NULL,
        user_agent text,
        counted boolean NOT NULL
      )`);
    await q.query(`CREATE INDEX email_opens_message_idx ON email_opens (message_id, opened_at DESC)`);
    await q.query(`
      CREATE TABLE agents (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
        line_id uuid NOT NULL REFERENCES lines(id) ON DELETE CASCADE,
        name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
        mode text NOT NULL CHECK (mode IN ('DRAFT', 'AUTO', 'SUPERVISED')),
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE agent_turns (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
        agent_id uuid NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
        thread_id uuid NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
        status text NOT NULL CHECK (status IN ('AWAITING_APPROVAL', 'SENT', 'REJECTED')),
        body text NOT NULL,
        message_id uuid REFERENCES messages(id) ON DELETE SET NULL,
        decided_by uuid REFERENCES users(id) ON DELETE SET NULL,
        decided_at timestamptz,
        created_at timestamptz(3) NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX agent_turns_thread_idx ON agent_turns (thread_id, created_at DESC)`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const table of [
      'agent_turns',
      'agents',
      'email_opens',
      'calendar_events',
      'attachments',
      'thread_labels',
      'labels',
      'messages',
      'threads',
      'identities',
      'contacts',
      'email_account_health',
    ]) {
      await q.query(`DROP TABLE IF EXISTS ${table}`);
    }
    await q.query(`ALTER TABLE lines DROP COLUMN IF EXISTS sms_delivery_reports`);
  }
}
