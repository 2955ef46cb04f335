import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { NotFoundError, ValidationError } from '../../common/errors';
import { EventBus } from '../../events/event-bus';
import { EmailAccountHealthData } from '../../events/event-payloads';

export type HealthStatus = 'healthy' | 'unhealthy';

export interface SyncOutcome {
  ok: boolean;
  errorKind?: string;
  error?: string;
}

/** The mailbox's health after a sync report, and which transition (if any) the report caused. */
export interface MailboxHealthView {
  lineId: string;
  emailAddress: string;
  status: HealthStatus;
  /** false while the mailbox is unhealthy. */
  isActive: boolean;
  errorKind: string | null;
  error: string | null;
  /** When the current status began (null while it was never unhealthy). */
  since: string | null;
  /** The last successful sync. */
  lastSyncedAt: string | null;
  /** The event this report published: `unhealthy`, `recovered`, or null (no change of state). */
  transition: 'unhealthy' | 'recovered' | null;
}

interface HealthRow {
  status: HealthStatus;
  error_kind: string | null;
  error: string | null;
  since: Date | null;
  last_synced_at: Date | null;
}

/**
 * The health of each email account, driven by the mailbox sync's reports. Edge-triggered: the
 * first failure after a healthy state (or ever) publishes email_account.health_changed
 * `unhealthy`, the first success after that publishes `recovered`; reports that change no state
 * publish nothing. Reports for one mailbox are serialised by a lock on its health row.
 */
@Injectable()
export class MailboxHealthService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly bus: EventBus,
  ) {}

  /** The spec's emailAccount objects for these lines; a mailbox that never reported counts as active. */
  async emailAccounts(
    lines: Array<{ id: string; address: string }>,
  ): Promise<Array<{ id: string; emailAddress: string; isActive: boolean; lastSyncedAt: string | null }>> {
    if (lines.length === 0) return [];
    const rows: Array<{ line_id: string; status: HealthStatus; last_synced_at: Date | null }> = await this.dataSource.query(
      `SELECT line_id, status, last_synced_at FROM email_account_health WHERE line_id = ANY ($1::uuid[])`,
      [lines.map((l) => l.id)],
    );
    const health = new Map(rows.map((r) => [r.line_id, r]));
    return lines.map((line) => {
      const h = health.get(line.id);
      return {
        id: line.id,
        emailAddress: line.address,
        isActive: h ? h.status === 'healthy' : true,
        lastSyncedAt: h?.last_synced_at?.toISOString() ?? null,
      };
    });
  }

  async recordSync(lineId: string, outcome: SyncOutcome): Promise<MailboxHealthView> {
    if (outcome.ok && (outcome.errorKind !== undefined || outcome.error !== undefined)) {
      const field = outcome.errorKind !== undefined ? 'errorKind' : 'error';
      throw new ValidationError(`${field} is only for a failed sync (ok: false)`, field);
    }
    return this.dataSource.transaction(async (tx) => {
      const [line]: Array<{ id: string; org_id: string; address: string }> = await tx.query(
        `SELECT id, org_id, address FROM lines WHERE id = $1 AND type = 'EMAIL_ACCOUNT' AND deleted_at IS NULL`,
        [lineId],
      );
      if (!line) throw NotFoundError.of('email account', lineId, 'lineId');
      await tx.query(`INSERT INTO email_account_health (line_id, status) VALUES ($1, 'healthy') ON CONFLICT (line_id) DO NOTHING`, [lineId]);
      const [before]: HealthRow[] = await tx.query(
        `SELECT status, error_kind, error, since, last_synced_at FROM email_account_health WHERE line_id = $1 FOR UPDATE`,
        [lineId],
      );
      const now = new Date();
      let after: HealthRow;
      let transition: MailboxHealthView['transition'] = null;
      if (outcome.ok) {
        if (before.status === 'unhealthy') {
          after = { status: 'healthy', error_kind: null, error: null, since: now, last_synced_at: now };
          transition = 'recovered';
        } else {
          after = { ...before, last_synced_at: now };
        }
      } else {
        const failure = { error_kind: outcome.errorKind ?? null, error: outcome.error ?? null };
        if (before.status === 'healthy') {
          after = { ...before, ...failure, status: 'unhealthy', since: now };
          transition = 'unhealthy';
        } else {
          after = { ...before, ...failure }; // still failing: the latest error, no event
        }
      }
      await tx.query(
        `UPDATE email_account_health SET status = $2, error_kind = $3, error = $4, since = $5, last_synced_at = $6, updated_at = now()
          WHERE line_id = $1`,
        [lineId, after.status, after.error_kind, after.error, after.since, after.last_synced_at],
      );
      if (transition) {
        const data: EmailAccountHealthData = {
          emailAccount: {
            id: line.id,
            emailAddress: line.address,
            isActive: after.status === 'healthy',
            lastSyncedAt: after.last_synced_at?.toISOString() ?? null,
          },
          health: { status: transition, errorKind: after.error_kind, error: after.error, since: after.since?.toISOString() ?? null },
        };
        // lineId: endpoints scoped to channels hear it only for mailboxes in their scope.
        await this.bus.publish({ type: 'email_account.health_changed', orgId: line.org_id, lineId: line.id, data }, tx);
      }
      return {
        lineId: line.id,
        emailAddress: line.address,
        status: after.status,
        isActive: after.status === 'healthy',
        errorKind: after.error_kind,
        error: after.error,
        since: after.since?.toISOString() ?? null,
        lastSyncedAt: after.last_synced_at?.toISOString() ?? null,
        transition,
      };
    });
  }
}
