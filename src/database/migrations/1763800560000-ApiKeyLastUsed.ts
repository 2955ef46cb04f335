import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * When a key last authenticated a request, for the "Last used" column of Settings → API keys.
 * Written at most once a minute per key, off the request's critical path (ApiKeysService.resolve),
 * so it is accurate to the minute. Null until the key is first used.
 */
export class ApiKeyLastUsed1763800560000 implements MigrationInterface {
  name = 'ApiKeyLastUsed1763800560000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE api_keys ADD COLUMN last_used_at timestamptz`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE api_keys DROP COLUMN last_used_at`);
  }
}
