import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The due sweep of scheduled sends reads `scheduled_messages` (a message's id and send_at while it
 * is SCHEDULED, kept by a trigger on messages) instead of the partial index
 * messages_scheduled_due_idx `(send_at) WHERE status = 'SCHEDULED'`. A column an index's
 * predicate names is one PostgreSQL must check on every UPDATE, so with that index no status
 * change of any message could be a HOT update: each one (two a send: SENT, then DELIVERED) wrote
 * a new entry into every index of messages, the full-text one included. Without it the carrier's
 * report (SENT → DELIVERED, status alone) is HOT again where the page has room.
 *
 * The triggers are created before the rows of the SCHEDULED messages are copied in: CREATE
 * TRIGGER holds off the transactions writing messages until this migration commits.
 */
export class ScheduledMessages1763801112000 implements MigrationInterface {
  name = 'ScheduledMessages1763801112000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE scheduled_messages (
        message_id uuid NOT NULL,
        send_at timestamptz(3) NOT NULL,
        CONSTRAINT scheduled_messages_pkey PRIMARY KEY (message_id),
        CONSTRAINT scheduled_messages_message_id_fkey FOREIGN KEY (message_id) REFERENCES messages(id) ON DELETE CASCADE
      )`);
    await q.query(`CREATE INDEX scheduled_messages_due_idx ON scheduled_messages (send_at)`);
    await q.query(`
      CREATE FUNCTION messages_keep_scheduled() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'UPDATE' THEN
          DELETE FROM scheduled_messages WHERE message_id = OLD.id;
        END IF;
        IF NEW.status = 'SCHEDULED' THEN
          INSERT INTO scheduled_messages (message_id, send_at) VALUES (NEW.id, NEW.send_at);
        END IF;
        RETURN NULL;
      END $$`);
    await q.query(`CREATE TRIGGER messages_scheduled AFTER INSERT ON messages
                     FOR EACH ROW WHEN (NEW.status = 'SCHEDULED') EXECUTE FUNCTION messages_keep_scheduled()`);
    await q.query(`CREATE TRIGGER messages_rescheduled AFTER UPDATE OF status, send_at ON messages
                     FOR EACH ROW WHEN (OLD.status = 'SCHEDULED' OR NEW.status = 'SCHEDULED') EXECUTE FUNCTION messages_keep_scheduled()`);
    await q.query(`INSERT INTO scheduled_messages (message_id, send_at) SELECT id, send_at FROM messages WHERE status = 'SCHEDULED'`);
    await q.query(`DROP INDEX messages_scheduled_due_idx`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX messages_scheduled_due_idx ON messages (send_at) WHERE status = 'SCHEDULED'`);
    await q.query(`DROP TRIGGER messages_rescheduled ON messages`);
    await q.query(`DROP TRIGGER messages_scheduled ON messages`);
    await q.query(`DROP FUNCTION messages_keep_scheduled()`);
    await q.query(`DROP TABLE scheduled_messages`);
  }
}
