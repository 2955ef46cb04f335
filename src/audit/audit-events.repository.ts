import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, QueryRunner } from 'typeorm';
import { AuditActorKind, AuditOutcome, AuditSurface } from './audit-event.entity';
import type { AuditTargets } from './audit-call';
import { queryNamed, SqlCondition } from '../database/sql';

/** One audit row as written. */
export interface AuditRow {
  id: string;
  orgId: string | null;
  at: Date;
  actorKind: AuditActorKind;
  credentialId: string | null;
  userId: string | null;
  action: string;
  surface: AuditSurface;
  targets: AuditTargets;
  outcome: AuditOutcome;
  errorCode: string | null;
  detail: string | null;
}

export interface AuditPageQuery {
  orgId: string;
  credentialId: string | null;
  since: Date | null;
  until: Date | null;
  after: { key: string; id: string } | null;
  limit: number;
}

const INSERT_SQL = `INSERT INTO audit_events (id, org_id, at, actor_kind, credential_id, user_id, action, surface, targets, outcome, error_code, detail)
  VALUES (:id, :orgId, :at, :actorKind, :credentialId, :userId, :action, :surface, :targets, :outcome, :errorCode, :detail)`;

/** A `:name` of INSERT_SQL as a CTE carried by another statement names it: prefixed, so it meets none of that statement's. */
const carriedName = (name: string) => `audit${name[0].toUpperCase()}${name.slice(1)}`;
const CARRIED_INSERT_SQL = INSERT_SQL.replace(/:(\w+)/g, (_, name: string) => `:${carriedName(name)}`);

function paramsOf(row: AuditRow): Record<string, unknown> {
  return {
    id: row.id,
    orgId: row.orgId,
    at: row.at,
    actorKind: row.actorKind,
    credentialId: row.credentialId,
    userId: row.userId,
    action: row.action,
    surface: row.surface,
    targets: row.targets,
    outcome: row.outcome,
    errorCode: row.errorCode,
    detail: row.detail,
  };
}

/** The SQL of the audit trail (docs/decisions.md, "SQL"). */
@Injectable()
export class AuditEventsRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** Writes a row, through `runner` (the committing transaction of the change) or on its own. */
  async insert(row: AuditRow, runner?: QueryRunner): Promise<void> {
    await queryNamed(runner?.manager ?? this.dataSource.manager, INSERT_SQL, paramsOf(row));
  }

  /**
   * The INSERT of `row` as a CTE for a statement of `runner`'s transaction to carry (claimAuditRow),
   * with its `:named` parameters: written with that statement, as `insert` through `runner` would.
   */
  insertCarried(row: AuditRow, runner: QueryRunner): SqlCondition {
    if (!runner.isTransactionActive) throw new Error('an audit row is carried only by a statement of an open transaction');
    return { sql: CARRIED_INSERT_SQL, parameters: Object.fromEntries(Object.entries(paramsOf(row)).map(([name, value]) => [carriedName(name), value])) };
  }

  /** The targets of a row written in `runner`'s transaction and not yet committed: ids the call named after the row was written (AuditTrail). */
  async retarget(runner: QueryRunner, id: string, targets: AuditTargets): Promise<void> {
    await queryNamed(runner.manager, `UPDATE audit_events SET targets = :targets WHERE id = :id`, { id, targets });
  }

  /** Completes a row written at commit: the result's ids and how the call ended. */
  async complete(id: string, targets: AuditTargets, outcome: AuditOutcome, errorCode: string | null, detail: string | null): Promise<void> {
    await this.dataSource.query(`UPDATE audit_events SET targets = $2, outcome = $3, error_code = $4, detail = COALESCE($5, detail) WHERE id = $1`, [
      id,
      targets,
      outcome,
      errorCode,
      detail,
    ]);
  }

  /** One org's rows, newest first: (org_id, at, id) scanned backwards from the cursor's position. */
  async page(q: AuditPageQuery): Promise<AuditRow[]> {
    const rows = (await this.dataSource.query(
      `SELECT id, org_id, at, actor_kind, credential_id, user_id, action, surface, targets, outcome, error_code, detail
         FROM audit_events
        WHERE org_id = $1
          AND ($2::uuid IS NULL OR credential_id = $2::uuid)
          AND ($3::timestamptz IS NULL OR at >= $3)
          AND ($4::timestamptz IS NULL OR at < $4)
          AND ($5::timestamptz IS NULL OR (at, id) < ($5, $6::uuid))
        ORDER BY at DESC, id DESC
        LIMIT $7`,
      [q.orgId, q.credentialId, q.since, q.until, q.after?.key ?? null, q.after?.id ?? null, q.limit],
    )) as Array<Record<string, unknown>>;
    return rows.map((r) => ({
      id: r.id as string,
      orgId: r.org_id as string | null,
      at: r.at as Date,
      actorKind: r.actor_kind as AuditActorKind,
      credentialId: r.credential_id as string | null,
      userId: r.user_id as string | null,
      action: r.action as string,
      surface: r.surface as AuditSurface,
      targets: r.targets as AuditTargets,
      outcome: r.outcome as AuditOutcome,
      errorCode: r.error_code as string | null,
      detail: r.detail as string | null,
    }));
  }

  /** The org's API keys and connected apps, by name. */
  async credentialsOf(orgId: string): Promise<Array<{ id: string; kind: 'api_key' | 'oauth_grant'; name: string }>> {
    return (await this.dataSource.query(
      `SELECT k.id, 'api_key' AS kind, k.name
         FROM api_keys k JOIN users u ON u.id = k.user_id WHERE u.org_id = $1
       UNION ALL
       SELECT g.id, 'oauth_grant' AS kind, COALESCE(c.client_name, 'Connected app') AS name
         FROM oauth_grants g JOIN users u ON u.id = g.user_id JOIN oauth_clients c ON c.client_id = g.client_id WHERE u.org_id = $1
       ORDER BY name, id`,
      [orgId],
    )) as Array<{ id: string; kind: 'api_key' | 'oauth_grant'; name: string }>;
  }

  /** The org's people, for naming who acted. */
  async peopleOf(orgId: string): Promise<Array<{ id: string; displayName: string }>> {
    return (await this.dataSource.query(`SELECT id, display_name AS "displayName" FROM users WHERE org_id = $1 ORDER BY display_name, id`, [orgId])) as Array<{
      id: string;
      displayName: string;
    }>;
  }

  /** The org an admin path names: directly, or through a user, line, API key or OAuth grant; null when none. */
  async orgOfAdminPath(ids: {
    orgId: string | null;
    userId: string | null;
    lineId: string | null;
    keyId: string | null;
    grantId: string | null;
  }): Promise<string | null> {
    const [row] = (await this.dataSource.query(
      `SELECT COALESCE($1::uuid,
                (SELECT org_id FROM users WHERE id = $2::uuid),
                (SELECT org_id FROM lines WHERE id = $3::uuid),
                (SELECT u.org_id FROM api_keys k JOIN users u ON u.id = k.user_id WHERE k.id = $4::uuid),
                (SELECT u.org_id FROM oauth_grants g JOIN users u ON u.id = g.user_id WHERE g.id = $5::uuid)) AS org_id`,
      [ids.orgId, ids.userId, ids.lineId, ids.keyId, ids.grantId],
    )) as Array<{ org_id: string | null }>;
    return row?.org_id ?? null;
  }
}
