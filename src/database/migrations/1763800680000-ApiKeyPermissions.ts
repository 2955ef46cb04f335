import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * API key permissions (issue 16, docs/mcp.md "Key permissions"): an allowlist of `read`, `send`
 * and `webhooks` beside the key's channel access. Existing keys get all three, as does a key
 * created without any, so nothing a key could do before changes. A key may not have none (it could
 * call no tool), nor a value outside the three.
 */
export class ApiKeyPermissions1763800680000 implements MigrationInterface {
  name = 'ApiKeyPermissions1763800680000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE api_keys ADD COLUMN permissions text[] NOT NULL DEFAULT '{read,send,webhooks}'`);
    await q.query(`
      ALTER TABLE api_keys ADD CONSTRAINT api_keys_permissions_check
        CHECK (cardinality(permissions) >= 1 AND permissions <@ ARRAY['read', 'send', 'webhooks']::text[])`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE api_keys DROP COLUMN permissions`);
  }
}
