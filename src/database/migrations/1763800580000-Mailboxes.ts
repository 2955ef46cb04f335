import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The IMAP and SMTP servers of an email account line (docs/mailboxes.md): at most one row per line,
 * passwords sealed with SECRETS_KEY like webhook secrets. `credentials_version` grows with every
 * change of the connection, so work started with older credentials can tell it is stale.
 */
export class Mailboxes1763800580000 implements MigrationInterface {
  name = 'Mailboxes1763800580000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE mailboxes (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        line_id uuid NOT NULL REFERENCES lines(id) ON DELETE CASCADE,
        imap_host text NOT NULL CHECK (length(imap_host) BETWEEN 1 AND 253),
        imap_port int NOT NULL CHECK (imap_port BETWEEN 1 AND 65535),
        imap_tls text NOT NULL CHECK (imap_tls IN ('implicit', 'starttls', 'none')),
        imap_username text NOT NULL CHECK (length(imap_username) BETWEEN 1 AND 320),
        imap_password_sealed text NOT NULL,
        smtp_host text NOT NULL CHECK (length(smtp_host) BETWEEN 1 AND 253),
        smtp_port int NOT NULL CHECK (smtp_port BETWEEN 1 AND 65535),
        smtp_tls text NOT NULL CHECK (smtp_tls IN ('implicit', 'starttls', 'none')),
        smtp_username text NOT NULL CHECK (length(smtp_username) BETWEEN 1 AND 320),
        smtp_password_sealed text NOT NULL,
        credentials_version int NOT NULL DEFAULT 1 CHECK (credentials_version >= 1),
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE UNIQUE INDEX mailboxes_line_id_key ON mailboxes (line_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE mailboxes`);
  }
}
