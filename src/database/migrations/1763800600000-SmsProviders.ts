import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The SMS provider account of a phone number line (docs/twilio.md): at most one per line, the auth
 * token sealed with SECRETS_KEY. Requests Twilio signs are matched to their account by
 * `account_sid` (indexed) before the signature is checked with that account's token.
 */
export class SmsProviders1763800600000 implements MigrationInterface {
  name = 'SmsProviders1763800600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE sms_providers (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        line_id uuid NOT NULL REFERENCES lines(id) ON DELETE CASCADE,
        provider text NOT NULL CHECK (provider = 'twilio'),
        account_sid text NOT NULL CHECK (account_sid ~ '^[A-Za-z0-9_-]{1,64}$'),
        auth_token_sealed text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE UNIQUE INDEX sms_providers_line_id_key ON sms_providers (line_id)`);
    await q.query(`CREATE INDEX sms_providers_account_sid_idx ON sms_providers (account_sid)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE sms_providers`);
  }
}
