import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { Principal } from '../../../identity/principal';
import { callerLines } from '../../../identity/line-access.sql';
import { queryNamed } from '../../../database/sql';

export type HealthStatus = 'healthy' | 'unhealthy';

/** A mailbox's health row, as a sync report reads and writes it. */
export interface HealthRow {
  status: HealthStatus;
  error_kind: string | null;
  error: string | null;
  since: Date | null;
  last_synced_at: Date | null;
}

/** A live email account line. */
export interface EmailAccountRow {
  id: string;
  org_id: string;
  address: string;
}

/**
 * SQL of mailbox health (email_account_health, one row per email account line). Reads for a
 * tool take the `Principal` and cover its email accounts only; the sync-report methods act for the
 * mailbox sync (an ingest route) on the line id it reports about. Rules live in MailboxHealthService.
 */
@Injectable()
export class MailboxHealthRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** The health rows of the caller's email accounts, the lines it may see (callerLines); a mailbox that never reported has none. */
  healthOf(caller: Principal): Promise<Array<{ line_id: string; status: HealthStatus; last_synced_at: Date | null }>> {
    const scope = callerLines(caller, 'h.line_id');
    return queryNamed(this.dataSource.manager, `SELECT h.line_id, h.status, h.last_synced_at FROM email_account_health h WHERE ${scope.sql}`, scope.parameters);
  }

  /** The health rows of these lines (a mailbox that never reported has none). The caller scopes the ids. */
  healthOfLines(lineIds: string[]): Promise<Array<HealthRow & { line_id: string }>> {
    return queryNamed(
      this.dataSource.manager,
      `SELECT line_id, status, error_kind, error, since, last_synced_at FROM email_account_health WHERE line_id = ANY (:lineIds::uuid[])`,
      { lineIds },
    );
  }

  /** The mailbox's health row (created healthy on its first report), locked until the transaction ends. */
  async lockHealth(manager: EntityManager, lineId: string): Promise<HealthRow> {
    await queryNamed(manager, `INSERT INTO email_account_health (line_id, status) VALUES (:lineId, 'healthy') ON CONFLICT (line_id) DO NOTHING`, { lineId });
    const [health] = await queryNamed<HealthRow[]>(
      manager,
      `SELECT status, error_kind, error, since, last_synced_at FROM email_account_health WHERE line_id = :lineId FOR UPDATE`,
      { lineId },
    );
    return health;
  }

  /** Writes the health the report left. */
  async saveHealth(manager: EntityManager, lineId: string, health: HealthRow): Promise<void> {
    await queryNamed(
      manager,
      `UPDATE email_account_health SET status = :status, error_kind = :errorKind, error = :error, since = :since, last_synced_at = :lastSyncedAt, updated_at = now()
          WHERE line_id = :lineId`,
      { lineId, status: health.status, errorKind: health.error_kind, error: health.error, since: health.since, lastSyncedAt: health.last_synced_at },
    );
  }
}
