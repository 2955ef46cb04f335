import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * OAuth 2.1 for the MCP endpoint (issue 31, docs/mcp.md "Connecting Claude, ChatGPT and other
 * OAuth clients"): self-registered public clients; grants (a person's consent: channel access and
 * permissions with the rules of an API key, bound to the MCP resource); authorization codes and
 * tokens of a grant, stored as SHA-256 hashes only. A grant's id is a UUID of version 8, an API
 * key's one of version 4: the two never collide where a key id is used (rate limits, download links).
 * Deleting a grant (revocation, a reused code or refresh token, its user removed) deletes its tokens.
 */
export class OAuth1763800690000 implements MigrationInterface {
  name = 'OAuth1763800690000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE oauth_clients (
        client_id text PRIMARY KEY,
        client_name text,
        redirect_uris text[] NOT NULL CHECK (cardinality(redirect_uris) BETWEEN 1 AND 10),
        metadata jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        last_used_at timestamptz
      )`);
    await q.query(`
      CREATE TABLE oauth_grants (
        id uuid PRIMARY KEY CHECK (substr(id::text, 15, 1) = '8'),
        user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        client_id text NOT NULL REFERENCES oauth_clients (client_id) ON DELETE CASCADE,
        resource text NOT NULL,
        channel_access_mode text NOT NULL CHECK (channel_access_mode IN ('ALL', 'LINES')),
        allowed_addresses text[] NOT NULL DEFAULT '{}',
        permissions text[] NOT NULL CHECK (cardinality(permissions) >= 1 AND permissions <@ ARRAY['read', 'send', 'webhooks']::text[]),
        created_at timestamptz NOT NULL DEFAULT now(),
        last_used_at timestamptz,
        CHECK (channel_access_mode = 'LINES' OR cardinality(allowed_addresses) = 0)
      )`);
    await q.query(`CREATE INDEX oauth_grants_user_id_idx ON oauth_grants (user_id)`);
    await q.query(`CREATE INDEX oauth_grants_client_id_idx ON oauth_grants (client_id)`);
    await q.query(`
      CREATE TABLE oauth_codes (
        code_hash text PRIMARY KEY CHECK (code_hash ~ '^[0-9a-f]{64}$'),
        grant_id uuid NOT NULL REFERENCES oauth_grants (id) ON DELETE CASCADE,
        redirect_uri text NOT NULL,
        code_challenge text NOT NULL,
        expires_at timestamptz NOT NULL,
        used_at timestamptz
      )`);
    await q.query(`CREATE INDEX oauth_codes_grant_id_idx ON oauth_codes (grant_id)`);
    await q.query(`
      CREATE TABLE oauth_tokens (
        token_hash text PRIMARY KEY CHECK (token_hash ~ '^[0-9a-f]{64}$'),
        grant_id uuid NOT NULL REFERENCES oauth_grants (id) ON DELETE CASCADE,
        kind text NOT NULL CHECK (kind IN ('access', 'refresh')),
        expires_at timestamptz NOT NULL,
        used_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX oauth_tokens_grant_id_idx ON oauth_tokens (grant_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE oauth_tokens`);
    await q.query(`DROP TABLE oauth_codes`);
    await q.query(`DROP TABLE oauth_grants`);
    await q.query(`DROP TABLE oauth_clients`);
  }
}
