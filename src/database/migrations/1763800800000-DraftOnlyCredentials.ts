import { MigrationInterface, QueryRunner } from 'typeorm';

const KINDS_BEFORE = `ARRAY['message.received', 'message.sent', 'message.status_changed', 'thread.created', 'email.opened', 'attachment.extracted', 'contact.merged', 'email_account.health_changed', 'agent_turn.awaiting_approval', 'agent_turn.sent', 'sms.opted_out', 'sms.opted_in']`;
const KINDS_AFTER = `ARRAY['message.received', 'message.sent', 'message.status_changed', 'thread.created', 'email.opened', 'attachment.extracted', 'contact.merged', 'email_account.health_changed', 'agent_turn.awaiting_approval', 'agent_turn.sent', 'sms.opted_out', 'sms.opted_in', 'agent_turn.rejected']`;

/**
 * Issue 45, draft-only credentials (docs/decisions.md, "Draft-only credentials"):
 * - the permission `draft` for API keys and OAuth grants (and a client's scope), never with `send`;
 * - agent_turns hold a credential's draft too: no agent (agent_id null), the credential whose call
 *   proposed it (credential_id names an API key or an OAuth grant, no foreign key, as
 *   messages.sent_by_key_id: the record outlives the credential; its name as it was then), the
 *   line it goes from (line_id, the thread's: the scope of who sees the draft) and the proposal,
 *   the whole outbound message as queued (approval sends exactly that);
 * - a rejection's reason, and the event kind agent_turn.rejected that carries it.
 */
export class DraftOnlyCredentials1763800800000 implements MigrationInterface {
  name = 'DraftOnlyCredentials1763800800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE api_keys DROP CONSTRAINT api_keys_permissions_check`);
    await q.query(`
      ALTER TABLE api_keys ADD CONSTRAINT api_keys_permissions_check
        CHECK (cardinality(permissions) >= 1 AND permissions <@ ARRAY['read', 'send', 'draft', 'webhooks']::text[] AND NOT permissions @> ARRAY['send', 'draft']::text[])`);
    await q.query(`ALTER TABLE oauth_grants DROP CONSTRAINT oauth_grants_permissions_check, DROP CONSTRAINT oauth_grants_requested_scopes_check`);
    await q.query(`
      ALTER TABLE oauth_grants ADD CONSTRAINT oauth_grants_permissions_check
        CHECK (cardinality(permissions) >= 1 AND permissions <@ ARRAY['read', 'send', 'draft', 'webhooks']::text[] AND NOT permissions @> ARRAY['send', 'draft']::text[])`);
    await q.query(`
      ALTER TABLE oauth_grants ADD CONSTRAINT oauth_grants_requested_scopes_check
        CHECK (requested_scopes <@ ARRAY['read', 'send', 'draft', 'webhooks']::text[] AND permissions <@ requested_scopes)`);

    await q.query(`
      ALTER TABLE agent_turns
        ALTER COLUMN agent_id DROP NOT NULL,
        ADD COLUMN line_id uuid,
        ADD COLUMN credential_id uuid,
        ADD COLUMN credential_name text,
        ADD COLUMN credential_kind text,
        ADD COLUMN proposal jsonb,
        ADD COLUMN rejection_reason text,
        ADD CONSTRAINT agent_turns_credential_kind_check CHECK (credential_kind IN ('API_KEY', 'OAUTH_GRANT')),
        ADD CONSTRAINT agent_turns_rejection_reason_check CHECK (char_length(rejection_reason) <= 1000),
        ADD CONSTRAINT agent_turns_author_check CHECK (
          (agent_id IS NOT NULL AND credential_id IS NULL AND proposal IS NULL AND line_id IS NULL)
          OR (agent_id IS NULL AND credential_id IS NOT NULL AND credential_name IS NOT NULL AND credential_kind IS NOT NULL
              AND proposal IS NOT NULL AND line_id IS NOT NULL))`);
    await q.query(`CREATE INDEX agent_turns_credential_recent_idx ON agent_turns (line_id, created_at DESC, id DESC) WHERE agent_id IS NULL`);

    await q.query(`ALTER TABLE webhook_endpoints DROP CONSTRAINT webhook_endpoints_events_check`);
    await q.query(`ALTER TABLE webhook_endpoints ADD CONSTRAINT webhook_endpoints_events_check CHECK (cardinality(events) > 0 AND events <@ ${KINDS_AFTER})`);
    await q.query(`ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_event_type_check`);
    await q.query(`ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_event_type_check CHECK (event_type = ANY (${KINDS_AFTER}))`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DELETE FROM webhook_deliveries WHERE event_type = 'agent_turn.rejected'`);
    await q.query(`UPDATE webhook_endpoints SET events = array_remove(events, 'agent_turn.rejected') WHERE 'agent_turn.rejected' = ANY (events)`);
    await q.query(`ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_event_type_check`);
    await q.query(`ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_event_type_check CHECK (event_type = ANY (${KINDS_BEFORE}))`);
    await q.query(`ALTER TABLE webhook_endpoints DROP CONSTRAINT webhook_endpoints_events_check`);
    await q.query(`ALTER TABLE webhook_endpoints ADD CONSTRAINT webhook_endpoints_events_check CHECK (cardinality(events) > 0 AND events <@ ${KINDS_BEFORE})`);
    await q.query(`DELETE FROM agent_turns WHERE agent_id IS NULL`);
    await q.query(`DROP INDEX agent_turns_credential_recent_idx`);
    await q.query(`
      ALTER TABLE agent_turns
        DROP CONSTRAINT agent_turns_author_check,
        DROP COLUMN rejection_reason, DROP COLUMN proposal, DROP COLUMN credential_kind, DROP COLUMN credential_name,
        DROP COLUMN credential_id, DROP COLUMN line_id,
        ALTER COLUMN agent_id SET NOT NULL`);
    await q.query(`UPDATE api_keys SET permissions = array_replace(permissions, 'draft', 'send')`);
    await q.query(
      `UPDATE oauth_grants SET permissions = array_replace(permissions, 'draft', 'send'), requested_scopes = array_remove(requested_scopes, 'draft')`,
    );
    await q.query(
      `UPDATE oauth_grants SET requested_scopes = array_append(requested_scopes, 'send') WHERE 'send' = ANY (permissions) AND NOT 'send' = ANY (requested_scopes)`,
    );
    await q.query(`ALTER TABLE oauth_grants DROP CONSTRAINT oauth_grants_permissions_check, DROP CONSTRAINT oauth_grants_requested_scopes_check`);
    await q.query(`
      ALTER TABLE oauth_grants ADD CONSTRAINT oauth_grants_permissions_check
        CHECK (cardinality(permissions) >= 1 AND permissions <@ ARRAY['read', 'send', 'webhooks']::text[])`);
    await q.query(`
      ALTER TABLE oauth_grants ADD CONSTRAINT oauth_grants_requested_scopes_check
        CHECK (requested_scopes <@ ARRAY['read', 'send', 'webhooks']::text[] AND permissions <@ requested_scopes)`);
    await q.query(`ALTER TABLE api_keys DROP CONSTRAINT api_keys_permissions_check`);
    await q.query(
      `ALTER TABLE api_keys ADD CONSTRAINT api_keys_permissions_check CHECK (cardinality(permissions) >= 1 AND permissions <@ ARRAY['read', 'send', 'webhooks']::text[])`,
    );
  }
}
