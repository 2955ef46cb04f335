import { MigrationInterface, QueryRunner } from 'typeorm';

export class Accounts1763800000000 implements MigrationInterface {
  name = 'Accounts1763800000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE orgs (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
        tier text NOT NULL CHECK (tier IN ('STARTER', 'PRO', 'POWER')),
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE users (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
        email text NOT NULL CHECK (email = lower(email)),
        display_name text NOT NULL,
        role text NOT NULL CHECK (role IN ('OWNER', 'ADMIN', 'MEMBER')),
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE UNIQUE INDEX users_email_key ON users (email)`);
    await q.query(`CREATE INDEX users_org_id_idx ON users (org_id)`);
    await q.query(`
      CREATE TABLE lines (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
        type text NOT NULL CHECK (type IN ('EMAIL_ACCOUNT', 'PHONE_NUMBER')),
        address text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        deleted_at timestamptz,
        CHECK (
          (type = 'PHONE_NUMBER' AND address ~ '^\\+[1-9][0-9]{1,14}$')
          OR (type = 'EMAIL_ACCOUNT' AND address = lower(address) AND address LIKE '%_@_%')
        )
      )`);
    await q.query(`CREATE UNIQUE INDEX lines_live_address_key ON lines (address) WHERE deleted_at IS NULL`);
    await q.query(`CREATE INDEX lines_org_id_idx ON lines (org_id)`);
    await q.query(`
      CREATE TABLE line_memberships (
        line_id uuid NOT NULL REFERENCES lines(id) ON DELETE CASCADE,
        user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (line_id, user_id)
      )`);
    await q.query(`CREATE INDEX line_memberships_user_id_idx ON line_memberships (user_id)`);
    await q.query(`
      CREATE TABLE api_keys (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
        key_hash text NOT NULL CHECK (key_hash ~ '^[0-9a-f]{64}$'),
        key_last4 text NOT NULL,
        channel_access_mode text NOT NULL CHECK (channel_access_mode IN ('ALL', 'LINES')),
        allowed_addresses text[] NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CHECK (channel_access_mode = 'LINES' OR cardinality(allowed_addresses) = 0)
      )`);
    await q.query(`CREATE UNIQUE INDEX api_keys_key_hash_key ON api_keys (key_hash)`);
    await q.query(`CREATE INDEX api_keys_user_id_idx ON api_keys (user_id)`);
    await q.query(`
      CREATE TABLE endpoint_cap_grants (
        org_id uuid PRIMARY KEY REFERENCES orgs(id) ON DELETE CASCADE,
        max_endpoints_per_user integer NOT NULL CHECK (max_endpoints_per_user BETWEEN 0 AND 1000),
        reason text NOT NULL CHECK (length(reason) > 0),
        expires_at timestamptz,
        granted_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE endpoint_cap_audit (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
        action text NOT NULL CHECK (action IN ('GRANTED', 'REMOVED')),
        max_endpoints_per_user integer,
        reason text NOT NULL,
        expires_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX endpoint_cap_audit_org_idx ON endpoint_cap_audit (org_id, created_at DESC)`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const table of ['endpoint_cap_audit', 'endpoint_cap_grants', 'api_keys', 'line_memberships', 'lines', 'users', 'orgs']) {
      await q.query(`DROP TABLE IF EXISTS ${table}`);
    }
  }
}
