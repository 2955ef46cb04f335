import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A limited send's first step in one call (SendPoliciesRepository.tryOneSlotWithRoom): take one of
 * the credential's limit slots if one is free, count its sends against the upper bounds, and keep
 * the slot only if every limit has room for all the sends that may be in flight unseen. Before, the
 * savepoint with the try-lock and the count were two round trips.
 *
 * The slot is taken in a block with an EXCEPTION clause, which is a subtransaction: raising
 * `send_limit_no_room` rolls it back and so gives the slot back (an advisory lock taken in a
 * subtransaction goes with it), as ROLLBACK TO SAVEPOINT did. The function is VOLATILE, so in READ
 * COMMITTED its count takes a snapshot after the slot is taken, as a second statement did: the rule
 * that at most `slots` − 1 other sends are unseen at the count holds as before.
 *
 * Counts: the hour and the day are sums of send_counts (an upper bound, this transaction's messages
 * included); the recipient's day is exact (messages_sent_by_key_to_idx, at most `max_to` + 1 rows),
 * leaving out this transaction's messages when `others_only` (a check made after them), with
 * `own_to` of its earlier sends to the recipient added.
 */
export class SendLimitSlot1763801120000 implements MigrationInterface {
  name = 'SendLimitSlot1763801120000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE FUNCTION send_limit_slot(lock_key text, credential uuid, recipient text, hour_from integer, day_from integer, day_ago timestamptz,
                                      max_hour integer, max_day integer, max_to integer, slots integer, others_only boolean, own_to integer)
      RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
      DECLARE
        slot integer;
        last_hour bigint;
        last_day bigint;
        to_recipient bigint := 0;
      BEGIN
        BEGIN
          SELECT s INTO slot FROM generate_series(0, slots - 1) s WHERE pg_try_advisory_xact_lock(hashtext(lock_key), s) LIMIT 1;
          IF slot IS NULL THEN
            RETURN false;
          END IF;
          SELECT COALESCE(sum(sends) FILTER (WHERE hour >= hour_from), 0), COALESCE(sum(sends), 0) INTO last_hour, last_day
            FROM send_counts WHERE credential_id = credential AND hour >= day_from;
          IF max_to IS NOT NULL THEN
            SELECT count(*) + own_to INTO to_recipient FROM (
              SELECT 1 FROM messages
               WHERE to_value = recipient AND sent_by_key_id = credential AND created_at > day_ago AND status <> 'SCHEDULED'
                 AND (NOT others_only OR messages.xmin <> pg_current_xact_id()::xid)
               LIMIT max_to + 1) r;
          END IF;
          IF (max_hour IS NULL OR last_hour + slots <= max_hour) AND (max_day IS NULL OR last_day + slots <= max_day)
             AND (max_to IS NULL OR to_recipient + slots <= max_to) THEN
            RETURN true;
          END IF;
          RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = 'send_limit_no_room';
        EXCEPTION WHEN raise_exception THEN
          IF SQLERRM <> 'send_limit_no_room' THEN
            RAISE;
          END IF;
          RETURN false;
        END;
      END $$`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION send_limit_slot(text, uuid, text, integer, integer, timestamptz, integer, integer, integer, integer, boolean, integer)`);
  }
}
