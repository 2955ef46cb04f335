import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A provider's delivery report that came before the hand-off stored the message's provider id
 * (docs/twilio.md, "Status callbacks"): Twilio's callbacks do not wait for its API answer to reach
 * us, and it never sends one twice, so the report is kept here until the hand-off applies it.
 */
export class PendingSmsReports1763800610000 implements MigrationInterface {
  name = 'PendingSmsReports1763800610000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE pending_sms_reports (
        line_id uuid NOT NULL REFERENCES lines(id) ON DELETE CASCADE,
        provider_message_id text NOT NULL CHECK (length(provider_message_id) BETWEEN 1 AND 200),
        status text NOT NULL CHECK (status IN ('DELIVERED', 'FAILED')),
        error text,
        received_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT pending_sms_reports_pkey PRIMARY KEY (line_id, provider_message_id)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE pending_sms_reports`);
  }
}
