import { MigrationInterface, QueryRunner } from 'typeorm';
import { createIndexUnlessBuilt } from './prebuilt-index';

/**
 * Issue 45: send policies (src/send-policies/). One row per org (its policy: neither credential
 * column set) and one per credential override (an API key or an OAuth grant, deleted with it).
 * In the org's row a null field is "no such rule"; in an override it is "inherit the org's value".
 * Replies-only asks whether the recipient wrote to the sending line first: the partial index on
 * inbound messages by line and sender answers that with one index probe.
 */
export class SendPolicies1763800790000 implements MigrationInterface {
  name = 'SendPolicies1763800790000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE send_policies (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
        api_key_id uuid REFERENCES api_keys(id) ON DELETE CASCADE,
        oauth_grant_id uuid REFERENCES oauth_grants(id) ON DELETE CASCADE,
        max_per_hour integer CHECK (max_per_hour BETWEEN 0 AND 1000000),
        max_per_day integer CHECK (max_per_day BETWEEN 0 AND 1000000),
        max_per_recipient_per_day integer CHECK (max_per_recipient_per_day BETWEEN 0 AND 1000000),
        quiet_start text CHECK (quiet_start ~ '^([01][0-9]|2[0-3]):[0-5][0-9]$'),
        quiet_end text CHECK (quiet_end ~ '^([01][0-9]|2[0-3]):[0-5][0-9]$'),
        time_zone text CHECK (length(time_zone) BETWEEN 1 AND 64),
        allow_list text[] CHECK (cardinality(allow_list) <= 500),
        deny_list text[] CHECK (cardinality(deny_list) <= 500),
        replies_only boolean,
        updated_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT send_policies_one_credential_check CHECK (api_key_id IS NULL OR oauth_grant_id IS NULL),
        CONSTRAINT send_policies_quiet_hours_check CHECK ((quiet_start IS NULL) = (quiet_end IS NULL))
      )`);
    await q.query(`CREATE UNIQUE INDEX send_policies_org_key ON send_policies (org_id) WHERE api_key_id IS NULL AND oauth_grant_id IS NULL`);
    await q.query(`CREATE UNIQUE INDEX send_policies_api_key_key ON send_policies (api_key_id) WHERE api_key_id IS NOT NULL`);
    await q.query(`CREATE UNIQUE INDEX send_policies_oauth_grant_key ON send_policies (oauth_grant_id) WHERE oauth_grant_id IS NOT NULL`);
    await q.query(`CREATE INDEX send_policies_org_idx ON send_policies (org_id)`);
    await createIndexUnlessBuilt(q, 'messages_inbound_from_idx', `ON messages (line_id, from_value) WHERE direction = 'INBOUND'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX messages_inbound_from_idx`);
    await q.query(`DROP TABLE send_policies`);
  }
}
