import { MigrationInterface, QueryRunner } from 'typeorm';

export class Outbox1763800200000 implements MigrationInterface {
  name = 'Outbox1763800200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE outbox_events (
        id bigserial PRIMARY KEY,
        type text NOT NULL,
        org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
        line_id uuid REFERENCES lines(id) ON DELETE CASCADE,
        data json NOT NULL,
        occurred_at timestamptz(3) NOT NULL DEFAULT now(),
        relayed_at timestamptz
      )`);
    await q.query(`CREATE INDEX outbox_events_pending_idx ON outbox_events (id) WHERE relayed_at IS NULL`);
    await q.query(`CREATE INDEX outbox_events_relayed_idx ON outbox_events (relayed_at) WHERE relayed_at IS NOT NULL`);
    // Sweeps look for deliveries that are due and whose job may have been lost.
    await q.query(`CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at)
                   WHERE status IN ('pending', 'retrying')`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS webhook_deliveries_due_idx`);
    await q.query(`DROP TABLE IF EXISTS outbox_events`);
  }
}
