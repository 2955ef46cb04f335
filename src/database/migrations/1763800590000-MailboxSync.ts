import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Mailbox sync (docs/mailboxes.md, "Sync"): where the sync stands (the INBOX's UIDVALIDITY and the
 * last UID imported), which worker syncs the mailbox until when (a lease), and the failures its
 * health is judged from (consecutive refused logins; since when the server is unreachable; the
 * credentials version a mailbox stopped at after AUTH).
 */
export class MailboxSync1763800590000 implements MigrationInterface {
  name = 'MailboxSync1763800590000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE mailboxes
        ADD COLUMN uid_validity bigint CHECK (uid_validity > 0),
        ADD COLUMN last_uid bigint CHECK (last_uid >= 0),
        ADD COLUMN sync_owner text,
        ADD COLUMN sync_lease_until timestamptz,
        ADD COLUMN auth_failures int NOT NULL DEFAULT 0 CHECK (auth_failures >= 0),
        ADD COLUMN auth_stopped_version int,
        ADD COLUMN unreachable_since timestamptz`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE mailboxes
        DROP COLUMN uid_validity, DROP COLUMN last_uid, DROP COLUMN sync_owner, DROP COLUMN sync_lease_until,
        DROP COLUMN auth_failures, DROP COLUMN auth_stopped_version, DROP COLUMN unreachable_since`);
  }
}
