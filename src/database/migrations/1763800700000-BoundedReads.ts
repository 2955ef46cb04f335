import { MigrationInterface, QueryRunner } from 'typeorm';
import { createIndexUnlessBuilt } from './prebuilt-index';

/**
 * Indexes that let every read tool read only its page, whatever the org's size
 * (test/mcp/read-plans.e2e-spec.ts checks each statement's plan on a large org).
 *
 * list_threads with a label lists that label's threads newest first. Asked of threads, the
 * planner either walks the caller's threads by recency testing each for the label (every thread
 * of a line, for a rare label) or reads every thread carrying it and sorts them (a fifth of a
 * large org's, for a common one). So each label row carries its thread's line and last activity,
 * and one index answers "this label's threads on this line, newest first" by reading only the page.
 *
 * The copies are kept by the database, whoever writes: a label row takes them from its thread when
 * it is inserted (locking the thread row against a concurrent message, which would otherwise move
 * the thread after the label row read it and before it was visible), and a thread whose last
 * activity moves passes it on to its label rows. A thread never changes line.
 *
 * A contact is in view when one of its identities has a thread on the caller's lines: threads by
 * partner (and line). list_contacts is alphabetical: contacts by org and lower-cased name.
 * list_agent_turns merges each of the caller's agents' newest turns: turns by agent and recency,
 * and the drafts awaiting approval (few among many decided turns) by their own partial index.
 * search_messages looks for a common word's matches among the org's newest messages first:
 * messages by org and recency, for the window's start and for the bitmap the planner ANDs with
 * the search index's.
 *
 * On a large database: the indexes on existing columns may be built beforehand with CREATE INDEX
 * CONCURRENTLY and these names and definitions (createIndexUnlessBuilt); the messages index reads
 * the largest table, and blocks writes to it while it builds. thread_labels' new columns are
 * filled by one UPDATE, and its index built here: it is the smallest of these tables.
 */
export class BoundedReads1763800700000 implements MigrationInterface {
  name = 'BoundedReads1763800700000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE thread_labels ADD COLUMN line_id uuid, ADD COLUMN last_message_at timestamptz(3)`);
    await q.query(`UPDATE thread_labels tl SET line_id = t.line_id, last_message_at = t.last_message_at FROM threads t WHERE t.id = tl.thread_id`);
    await q.query(`ALTER TABLE thread_labels ALTER COLUMN line_id SET NOT NULL, ALTER COLUMN last_message_at SET NOT NULL`);
    await q.query(`CREATE INDEX thread_labels_label_recent_idx ON thread_labels (label_id, line_id, last_message_at DESC, thread_id DESC)`);
    await q.query(`DROP INDEX thread_labels_label_idx`);
    await createIndexUnlessBuilt(q, 'threads_partner_idx', `ON threads (partner_identity_id, line_id)`);
    await createIndexUnlessBuilt(q, 'contacts_org_name_idx', `ON contacts (org_id, lower(COALESCE(display_name, '')), id)`);
    await createIndexUnlessBuilt(q, 'agent_turns_agent_recent_idx', `ON agent_turns (agent_id, created_at DESC, id DESC)`);
    await createIndexUnlessBuilt(q, 'agent_turns_awaiting_idx', `ON agent_turns (agent_id, created_at DESC, id DESC) WHERE status = 'AWAITING_APPROVAL'`);
    await q.query(`DROP INDEX agent_turns_agent_idx`);
    await createIndexUnlessBuilt(q, 'messages_org_recent_idx', `ON messages (org_id, created_at DESC)`);
    await q.query(`
      CREATE FUNCTION thread_labels_take_thread() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        SELECT t.line_id, t.last_message_at INTO NEW.line_id, NEW.last_message_at FROM threads t WHERE t.id = NEW.thread_id FOR SHARE;
        RETURN NEW;
      END $$`);
    await q.query(`
      CREATE TRIGGER thread_labels_take_thread BEFORE INSERT ON thread_labels
      FOR EACH ROW EXECUTE FUNCTION thread_labels_take_thread()`);
    await q.query(`
      CREATE FUNCTION threads_pass_recency_to_labels() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        UPDATE thread_labels SET last_message_at = NEW.last_message_at WHERE thread_id = NEW.id;
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE TRIGGER threads_pass_recency_to_labels AFTER UPDATE OF last_message_at ON threads
      FOR EACH ROW WHEN (OLD.last_message_at IS DISTINCT FROM NEW.last_message_at) EXECUTE FUNCTION threads_pass_recency_to_labels()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER threads_pass_recency_to_labels ON threads`);
    await q.query(`DROP FUNCTION threads_pass_recency_to_labels()`);
    await q.query(`DROP TRIGGER thread_labels_take_thread ON thread_labels`);
    await q.query(`DROP FUNCTION thread_labels_take_thread()`);
    await q.query(`DROP INDEX messages_org_recent_idx`);
    await q.query(`CREATE INDEX agent_turns_agent_idx ON agent_turns (agent_id)`);
    await q.query(`DROP INDEX agent_turns_awaiting_idx`);
    await q.query(`DROP INDEX agent_turns_agent_recent_idx`);
    await q.query(`DROP INDEX contacts_org_name_idx`);
    await q.query(`DROP INDEX threads_partner_idx`);
    await q.query(`CREATE INDEX thread_labels_label_idx ON thread_labels (label_id, thread_id)`);
    await q.query(`DROP INDEX thread_labels_label_recent_idx`);
    await q.query(`ALTER TABLE thread_labels DROP COLUMN line_id, DROP COLUMN last_message_at`);
  }
}
