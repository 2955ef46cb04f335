import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Send policies' hour and day limits read a credential's sends per hour from `send_counts` instead
 * of walking its sends of the window in messages (docs/send-policies.md, "Cost"): a row per
 * credential, hour (since the epoch, UTC) and PostgreSQL backend, counted by a trigger on
 * messages for every message a credential sends (not SCHEDULED: counted when it leaves SCHEDULED,
 * in the hour it was created in, as the limits count it). One row per backend, so two concurrent
 * sends of one credential never update the same row (a backend runs one transaction at a time):
 * the count costs a send no lock wait. The rows are an upper bound of the sends the limits count
 * (a deleted message stays counted); the check passes on it only with room to spare and counts
 * exactly otherwise (SendPoliciesService.checkLimits).
 *
 * The trigger is created before the last 25 hours are counted in: CREATE TRIGGER waits for the
 * transactions writing messages and holds them off until this migration commits, so every send is
 * counted once, by the backfill or by the trigger.
 */
export class SendCounts1763801110000 implements MigrationInterface {
  name = 'SendCounts1763801110000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE send_counts (
        credential_id uuid NOT NULL,
        hour integer NOT NULL,
        backend integer NOT NULL,
        sends integer NOT NULL,
        CONSTRAINT send_counts_pkey PRIMARY KEY (credential_id, hour, backend)
      )`);
    await q.query(`
      CREATE FUNCTION messages_count_send() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        -- An hour older than any window (a scheduled message created more than a day ago) is not read again.
        IF NEW.created_at > now() - interval '25 hours' THEN
          INSERT INTO send_counts (credential_id, hour, backend, sends)
          VALUES (NEW.sent_by_key_id, floor(extract(epoch FROM NEW.created_at) / 3600)::int, pg_backend_pid(), 1)
          ON CONFLICT (credential_id, hour, backend) DO UPDATE SET sends = send_counts.sends + 1;
        END IF;
        RETURN NULL;
      END $$`);
    await q.query(`CREATE TRIGGER messages_count_send AFTER INSERT ON messages
                     FOR EACH ROW WHEN (NEW.sent_by_key_id IS NOT NULL AND NEW.status <> 'SCHEDULED') EXECUTE FUNCTION messages_count_send()`);
    await q.query(`CREATE TRIGGER messages_count_released_send AFTER UPDATE OF status ON messages
                     FOR EACH ROW WHEN (OLD.status = 'SCHEDULED' AND NEW.status <> 'SCHEDULED' AND NEW.sent_by_key_id IS NOT NULL)
                     EXECUTE FUNCTION messages_count_send()`);
    await q.query(`
      INSERT INTO send_counts (credential_id, hour, backend, sends)
      SELECT sent_by_key_id, floor(extract(epoch FROM created_at) / 3600)::int, 0, count(*)
        FROM messages WHERE sent_by_key_id IS NOT NULL AND status <> 'SCHEDULED' AND created_at > now() - interval '25 hours'
       GROUP BY 1, 2`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER messages_count_released_send ON messages`);
    await q.query(`DROP TRIGGER messages_count_send ON messages`);
    await q.query(`DROP FUNCTION messages_count_send()`);
    await q.query(`DROP TABLE send_counts`);
  }
}
