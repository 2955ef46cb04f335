import { MigrationInterface, QueryRunner } from 'typeorm';

const KINDS_BEFORE = `ARRAY['message.received','message.sent','message.status_changed','thread.created','email.opened',
  'attachment.extracted','contact.merged','email_account.health_changed','agent_turn.awaiting_approval','agent_turn.sent']`;
const KINDS_AFTER = `ARRAY['message.received','message.sent','message.status_changed','thread.created','email.opened',
  'attachment.extracted','contact.merged','email_account.health_changed','agent_turn.awaiting_approval','agent_turn.sent',
  'sms.opted_out','sms.opted_in']`;

/**
 * Issue 45, SMS opt-out (docs/opt-out.md): per line and number, whether the number texted STOP
 * (or a synonym) and has not texted START since, when and by which keyword; the org's HELP text;
 * and the two event kinds that report a change (sms.opted_out, sms.opted_in).
 */
export class SmsOptOuts1763800780000 implements MigrationInterface {
  name = 'SmsOptOuts1763800780000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE sms_opt_outs (
        line_id uuid NOT NULL REFERENCES lines(id) ON DELETE CASCADE,
        number text NOT NULL CHECK (number ~ '^\\+[1-9][0-9]{1,14}$'),
        org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
        opted_out boolean NOT NULL,
        keyword text NOT NULL CHECK (keyword IN ('STOP', 'STOPALL', 'UNSUBSCRIBE', 'CANCEL', 'END', 'QUIT', 'START', 'UNSTOP', 'YES')),
        message_id uuid,
        changed_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT sms_opt_outs_pkey PRIMARY KEY (line_id, number)
      )`);
    await q.query(`CREATE INDEX sms_opt_outs_org_number_idx ON sms_opt_outs (org_id, number) WHERE opted_out`);
    await q.query(`
      CREATE TABLE sms_help_texts (
        org_id uuid NOT NULL PRIMARY KEY REFERENCES orgs(id) ON DELETE CASCADE,
        text text NOT NULL CHECK (length(text) BETWEEN 1 AND 320),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await this.kinds(q, KINDS_AFTER);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DELETE FROM webhook_deliveries WHERE event_type IN ('sms.opted_out', 'sms.opted_in')`);
    await q.query(`UPDATE webhook_endpoints SET events = array_remove(array_remove(events, 'sms.opted_out'), 'sms.opted_in')`);
    await q.query(`DELETE FROM webhook_endpoints WHERE cardinality(events) = 0`);
    await this.kinds(q, KINDS_BEFORE);
    await q.query(`DROP TABLE sms_help_texts`);
    await q.query(`DROP TABLE sms_opt_outs`);
  }

  private async kinds(q: QueryRunner, kinds: string): Promise<void> {
    await q.query(`ALTER TABLE webhook_endpoints DROP CONSTRAINT webhook_endpoints_events_check,
      ADD CONSTRAINT webhook_endpoints_events_check CHECK (cardinality(events) > 0 AND events <@ ${kinds})`);
    await q.query(`ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_event_type_check,
      ADD CONSTRAINT webhook_deliveries_event_type_check CHECK (event_type = ANY (${kinds}))`);
  }
}
