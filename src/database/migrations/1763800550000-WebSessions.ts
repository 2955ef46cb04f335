import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Sign-in for people (docs/web.md): one-time sign-in links sent by email, and the web sessions a
 * link opens. Tokens are stored only as their SHA-256 (hex); the raw token exists in the link or
 * the cookie alone. Both go with their user.
 */
export class WebSessions1763800550000 implements MigrationInterface {
  name = 'WebSessions1763800550000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE sign_in_links (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        token_hash text NOT NULL CHECK (token_hash ~ '^[0-9a-f]{64}$'),
        created_at timestamptz NOT NULL,
        expires_at timestamptz NOT NULL,
        used_at timestamptz,
        CHECK (expires_at > created_at)
      )`);
    await q.query(`CREATE UNIQUE INDEX sign_in_links_token_hash_key ON sign_in_links (token_hash)`);
    await q.query(`CREATE INDEX sign_in_links_user_id_idx ON sign_in_links (user_id)`);
    await q.query(`
      CREATE TABLE web_sessions (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        token_hash text NOT NULL CHECK (token_hash ~ '^[0-9a-f]{64}$'),
        csrf_token text NOT NULL CHECK (length(csrf_token) >= 32),
        created_at timestamptz NOT NULL,
        last_seen_at timestamptz NOT NULL,
        expires_at timestamptz NOT NULL,
        revoked_at timestamptz,
        user_agent text,
        ip text,
        CHECK (expires_at > created_at)
      )`);
    await q.query(`CREATE UNIQUE INDEX web_sessions_token_hash_key ON web_sessions (token_hash)`);
    await q.query(`CREATE INDEX web_sessions_user_id_idx ON web_sessions (user_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE web_sessions`);
    await q.query(`DROP TABLE sign_in_links`);
  }
}
