import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The scope an OAuth client asked for, kept on its grant (`requested_scopes`): a grant's
 * permissions never exceed it, at consent and when the person changes the app's access later in
 * Settings → Connected apps (docs/decisions.md, "OAuth authorization server"). What a grant made
 * before this asked for was not kept: its permissions stand in for it, so such a grant may be
 * narrowed and widened back, never beyond what it holds now, without connecting the app again.
 */
export class OAuthGrantScopes1763800720000 implements MigrationInterface {
  name = 'OAuthGrantScopes1763800720000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE oauth_grants ADD COLUMN requested_scopes text[]`);
    await q.query(`UPDATE oauth_grants SET requested_scopes = permissions`);
    await q.query(`ALTER TABLE oauth_grants ALTER COLUMN requested_scopes SET NOT NULL`);
    await q.query(`
      ALTER TABLE oauth_grants ADD CONSTRAINT oauth_grants_requested_scopes_check
        CHECK (requested_scopes <@ ARRAY['read', 'send', 'webhooks']::text[] AND permissions <@ requested_scopes)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE oauth_grants DROP COLUMN requested_scopes`);
  }
}
