import { MigrationInterface, QueryRunner } from 'typeorm';
import { createIndexUnlessBuilt } from './prebuilt-index';

/**
 * Positions of the committed event log (docs/decisions.md, "Event feed positions"): the relay
 * gives each event a `feed_position` in the transaction that claims it, under a transaction-scoped
 * advisory lock, so positions become visible in the order they are drawn and a reader of
 * `feed_position > cursor` never skips one that commits later. Events relayed before this keep
 * none: no cursor can name a place before the feed existed (a first poll starts from now), so
 * rewriting up to 7 days of rows would buy nothing; events still pending get theirs from the
 * relay. `outbox_feed_horizon` keeps the highest position retention has deleted, so a cursor
 * behind it is answered as truncated instead of silently skipping.
 */
export class EventFeedPositions1763800740000 implements MigrationInterface {
  name = 'EventFeedPositions1763800740000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE SEQUENCE outbox_feed_position_seq AS bigint`);
    await q.query(`ALTER TABLE outbox_events ADD COLUMN feed_position bigint`);
    await createIndexUnlessBuilt(q, 'outbox_events_feed_idx', 'ON outbox_events (org_id, feed_position) WHERE feed_position IS NOT NULL');
    await q.query(
      `CREATE TABLE outbox_feed_horizon (only_row boolean PRIMARY KEY DEFAULT true CONSTRAINT outbox_feed_horizon_only_row_check CHECK (only_row), deleted_through bigint NOT NULL)`,
    );
    await q.query(`INSERT INTO outbox_feed_horizon (deleted_through) VALUES (0)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS outbox_feed_horizon`);
    await q.query(`DROP INDEX IF EXISTS outbox_events_feed_idx`);
    await q.query(`ALTER TABLE outbox_events DROP COLUMN IF EXISTS feed_position`);
    await q.query(`DROP SEQUENCE IF EXISTS outbox_feed_position_seq`);
  }
}
