import { Injectable } from '@nestjs/common';
import { ForbiddenError, ValidationError } from '../common/errors';
import { Principal } from '../identity/principal';
import { roleAtLeast, UserRole } from '../identity/roles';
import { isIsoTimestamp, KeysetCursors } from '../common/keyset-cursor';
import { isUuid } from '../common/uuid';
import { AuditEventsRepository, AuditRow } from './audit-events.repository';

/** Rows on one page of the audit trail. */
export const AUDIT_PAGE_SIZE = 50;
/** The cursor's owner (KeysetCursors): a cursor of another list is refused here. */
const LIST = 'audit_events';

/** A row as listed: its org is the list's. */
export type AuditEventView = Omit<AuditRow, 'orgId'>;

export interface AuditFilter {
  credentialId?: string;
  /** Rows at or after. */
  since?: Date;
  /** Rows before. */
  until?: Date;
  cursor?: string;
}

/** The lowest role that may read the org's audit trail on the Settings page (docs/decisions.md, "The audit trail"). */
export const AUDIT_READER_ROLE: UserRole = 'ADMIN';

export function mayReadAuditTrail(role: UserRole): boolean {
  return roleAtLeast(role, AUDIT_READER_ROLE);
}

/** A page of the trail with the names of the org's credentials and people. */
export interface AuditPage {
  events: AuditEventView[];
  nextCursor: string | null;
  credentials: AuditCredential[];
  people: Array<{ id: string; displayName: string }>;
}

/** A credential of the org, for choosing whose actions to see. */
export interface AuditCredential {
  id: string;
  kind: 'api_key' | 'oauth_grant';
  name: string;
}

/** Reading the audit trail: one org's rows, newest first, by credential and time, in keyset pages. */
@Injectable()
export class AuditEvents {
  constructor(
    private readonly rows: AuditEventsRepository,
    private readonly cursors: KeysetCursors,
  ) {}

  async list(orgId: string, filter: AuditFilter): Promise<{ events: AuditEventView[]; nextCursor: string | null }> {
    if (filter.credentialId !== undefined && !isUuid(filter.credentialId)) throw new ValidationError('credentialId must be a UUID', 'credentialId');
    if (filter.since && filter.until && filter.since >= filter.until) throw new ValidationError('since must be before until', 'since');
    const after = filter.cursor === undefined ? null : this.cursors.decode(LIST, filter.cursor, isIsoTimestamp);
    const rows = await this.rows.page({
      orgId,
      credentialId: filter.credentialId?.toLowerCase() ?? null,
      since: filter.since ?? null,
      until: filter.until ?? null,
      after,
      limit: AUDIT_PAGE_SIZE + 1,
    });
    const page = rows.slice(0, AUDIT_PAGE_SIZE);
    const last = page[page.length - 1];
    return {
      events: page.map(({ orgId: _org, ...view }) => view),
      nextCursor: rows.length > AUDIT_PAGE_SIZE && last ? this.cursors.encode(LIST, { key: last.at.toISOString(), id: last.id }) : null,
    };
  }

  /** The org's API keys and connected apps, by name (a revoked one is gone; its rows stay, listed by its id). */
  credentialsOf(orgId: string): Promise<AuditCredential[]> {
    return this.rows.credentialsOf(orgId);
  }

  /**
   * A page of the trail of the person's org, for the Settings page: OWNER and ADMIN only (the trail
   * shows what every credential and person of the org did), with the names its rows refer to.
   */
  async pageFor(person: Principal, filter: AuditFilter): Promise<AuditPage> {
    if (!mayReadAuditTrail(person.role)) throw new ForbiddenError(`the audit trail is shown to the org's owners and admins; you are a ${person.role}`);
    const [listed, credentials, people] = await Promise.all([
      this.list(person.orgId, filter),
      this.credentialsOf(person.orgId),
      this.rows.peopleOf(person.orgId),
    ]);
    return { ...listed, credentials, people };
  }
}

/**
 * The filter of a listing from its query string (the admin API and the Settings page alike):
 * credentialId a UUID, since and until ISO 8601 date-times (a date alone, as a page's date field
 * gives it, is the whole day in UTC: since from its start, until through its end), cursor as a
 * previous page gave it. An empty value is no filter; a bad
 * one is a ValidationError naming its field.
 */
export function auditFilterOf(query: Record<string, unknown>): AuditFilter {
  const text = (field: string): string | undefined => {
    const value = query[field];
    if (value === undefined || value === '') return undefined;
    if (typeof value !== 'string') throw new ValidationError(`${field} must be given once, as text`, field);
    return value;
  };
  const time = (field: string): Date | undefined => {
    const value = text(field);
    if (value === undefined) return undefined;
    const date = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})?)?$/.test(value)
      ? new Date(/T/.test(value) && !/(Z|[+-]\d{2}:\d{2})$/.test(value) ? `${value}Z` : value)
      : null;
    if (!date || Number.isNaN(date.getTime())) throw new ValidationError(`${field} must be an ISO 8601 date-time such as 2026-11-29T08:00:00Z`, field);
    // A date alone is a whole day: since from its start, until to its end (the next day's start).
    return field === 'until' && value.length === 10 ? new Date(date.getTime() + 86_400_000) : date;
  };
  const credentialId = text('credentialId');
  if (credentialId !== undefined && !isUuid(credentialId)) throw new ValidationError('credentialId must be a UUID', 'credentialId');
  return { credentialId, since: time('since'), until: time('until'), cursor: text('cursor') };
}
