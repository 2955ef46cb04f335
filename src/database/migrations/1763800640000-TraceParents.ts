import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * OpenTelemetry (docs/operations.md, "Tracing"): the W3C traceparent of the span that published
 * an event, and of the relay's span that fanned it out to a delivery, so a later process (the
 * relay, a worker's attempt hours later) continues the same trace. Null when tracing is off.
 */
export class TraceParents1763800640000 implements MigrationInterface {
  name = 'TraceParents1763800640000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE outbox_events ADD COLUMN trace_parent text`);
    await q.query(`ALTER TABLE webhook_deliveries ADD COLUMN trace_parent text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE webhook_deliveries DROP COLUMN trace_parent`);
    await q.query(`ALTER TABLE outbox_events DROP COLUMN trace_parent`);
  }
}
