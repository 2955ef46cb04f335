import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Principal } from '../../../identity/principal';
import { NotFoundError, ValidationError } from '../../../common/errors';
import { EventBus } from '../../../events/event-bus';
import { EmailAccountHealthData } from '../../../events/event-payloads';
import { HealthRow, HealthStatus, MailboxHealthRepository } from './mailbox-health.repository';
import { LinesRepository } from '../../../identity/lines.repository';

export interface SyncOutcome {
  ok: boolean;
  errorKind?: string;
  error?: string;
}

/** A mailbox's health as its sync last reported it. */
export interface MailboxHealth {
  status: HealthStatus;
  /** `AUTH`, `NETWORK` or `RATE_LIMIT` while unhealthy (docs/mailboxes.md, "Health"). */
  errorKind: string | null;
  error: string | null;
  /** When the current status began (null while it was never unhealthy). */
  since: string | null;
  /** The last successful sync. */
  lastSyncedAt: string | null;
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
    private readonly mailboxes: MailboxHealthRepository,
    private readonly lines: LinesRepository,
  ) {}

  /** The spec's emailAccount objects for the caller's email accounts; a mailbox that never reported counts as active. */
  async emailAccounts(caller: Principal): Promise<Array<{ id: string; emailAddress: string; isActive: boolean; lastSyncedAt: string | null }>> {
    const lines = caller.lines.filter((line) => line.type === 'EMAIL_ACCOUNT');
    if (lines.length === 0) return [];
    const rows = await this.mailboxes.healthOf(caller);
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

  /** The health of these email accounts as their sync last reported it, by line id (none for a mailbox that never reported). The caller scopes the ids. */
  async healthOf(lineIds: string[]): Promise<Map<string, MailboxHealth>> {
    if (lineIds.length === 0) return new Map();
    const rows = await this.mailboxes.healthOfLines(lineIds);
    return new Map(
      rows.map((r) => [
        r.line_id,
        {
          status: r.status,
          errorKind: r.error_kind,
          error: r.error,
          since: r.since?.toISOString() ?? null,
          lastSyncedAt: r.last_synced_at?.toISOString() ?? null,
        },
      ]),
    );
  }

  async recordSync(lineId: string, outcome: SyncOutcome): Promise<MailboxHealthView> {
    if (outcome.ok && (outcome.errorKind !== undefined || outcome.error !== undefined)) {
      const field = outcome.errorKind !== undefined ? 'errorKind' : 'error';
      throw new ValidationError(`${field} is only for a failed sync (ok: false)`, field);
    }
    return this.dataSource.transaction(async (tx) => {
      const live = await this.lines.liveLine(lineId, { manager: tx });
      const line = live?.type === 'EMAIL_ACCOUNT' ? { id: live.id, org_id: live.org_id, address: live.address } : undefined;
      if (!line) throw NotFoundError.of('email account', lineId, 'lineId');
      const before = await this.mailboxes.lockHealth(tx, lineId);
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
        if (before.status === 'healthy' || (failure.error_kind === 'AUTH' && before.error_kind !== 'AUTH')) {
          // Failing now, or failing in the way that needs a person (RATE_LIMIT or NETWORK, then AUTH): an event.
          after = { ...before, ...failure, status: 'unhealthy', since: now };
          transition = 'unhealthy';
        } else {
          after = { ...before, ...failure }; // still failing: the latest error, no event
        }
      }
      await this.mailboxes.saveHealth(tx, lineId, after);
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
