import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 45: the audit trail (src/audit, docs/decisions.md "The audit trail"): one row per changing
 * call, written in the transaction of the change. Listed per org and per credential, newest first
 * (keyset on (at, id)); pruned by `at` (AUDIT_RETENTION_DAYS).
 */
export class AuditEvents1763800770000 implements MigrationInterface {
  name = 'AuditEvents1763800770000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE TABLE audit_events (
         id uuid PRIMARY KEY,
         org_id uuid,
         at timestamptz NOT NULL,
         actor_kind text NOT NULL CONSTRAINT audit_events_actor_kind_check CHECK (actor_kind IN ('api_key', 'oauth_grant', 'person', 'admin')),
         credential_id uuid,
         user_id uuid,
         action text NOT NULL,
         surface text NOT NULL CONSTRAINT audit_events_surface_check CHECK (surface IN ('mcp', 'rest', 'web', 'admin')),
         targets jsonb NOT NULL,
         outcome text NOT NULL CONSTRAINT audit_events_outcome_check CHECK (outcome IN ('ok', 'refused', 'failed')),
         error_code text,
         detail text
       )`,
    );
    await q.query(`CREATE INDEX audit_events_org_idx ON audit_events (org_id, at, id)`);
    await q.query(`CREATE INDEX audit_events_credential_idx ON audit_events (credential_id, at, id)`);
    await q.query(`CREATE INDEX audit_events_at_idx ON audit_events (at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE audit_events`);
  }
}
