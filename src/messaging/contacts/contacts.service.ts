import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { isEmail } from 'class-validator';
import { DataSource, EntityManager } from 'typeorm';
import { E164 } from '../../accounts/account.types';
import { Caller } from '../../auth/caller';
import { ConflictError, NotFoundError, ValidationError } from '../../common/errors';
import { EventBus } from '../../events/event-bus';
import { IdentityData, IdentityKind } from '../../events/event-payloads';
import { toIdentity } from '../message-data.builder';
import { containsPattern, KeysetCursors } from '../../common/keyset-cursor';

export const CONTACTS_PAGE_SIZE = 25;
export const MAX_CONTACTS_PAGE_SIZE = 100;
export const MAX_MERGE = 20;

export interface ContactView {
  id: string;
  displayName: string | null;
  notes: string | null;
  createdAt: string;
  updatedAt: string;
  /** Only when the contact is in view for the caller (see IN_VIEW); otherwise empty. */
  identities: IdentityData[];
}

export interface NewIdentity {
  kind: IdentityKind;
  value: string;
  displayName?: string;
}

interface ContactRow {
  id: string;
  display_name: string | null;
  notes: string | null;
  created_at: Date;
  updated_at: Date;
}

/**
 * Whether contact `c` is in view for a caller whose lines are `$lines`: it has a conversation
 * (a thread with one of its identities) on one of those lines, or no conversation on any line.
 * A contact whose conversations all live on other lines is still listed (contacts belong to the
 * org), but without its identities, and a search does not match their values: its addresses
 * would tell who writes to lines this key may not read. Message events reveal no more than
 * this: a thread's event carries its partner's contact with every identity.
 */
const IN_VIEW = (lines: string) => `(
  EXISTS (SELECT 1 FROM identities vi JOIN threads vt ON vt.partner_identity_id = vi.id
           WHERE vi.contact_id = c.id AND vt.line_id = ANY (${lines}::uuid[]))
  OR NOT EXISTS (SELECT 1 FROM identities vi JOIN threads vt ON vt.partner_identity_id = vi.id WHERE vi.contact_id = c.id))`;

/**
 * Contacts (people) and their identities (phone numbers, email addresses). Contacts belong to
 * the org; an identity first seen on an inbound message is an orphan until a contact claims it.
 */
@Injectable()
export class ContactsService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly bus: EventBus,
    private readonly cursors: KeysetCursors,
  ) {}

  /** Alphabetical by display name (case-insensitive), then id; keyset paged. */
  async list(caller: Caller, input: { query?: string; cursor?: string; limit?: number }): Promise<{ contacts: ContactView[]; nextCursor: string | null }> {
    const limit = input.limit ?? CONTACTS_PAGE_SIZE;
    const after = input.cursor === undefined ? undefined : this.cursors.decode('list_contacts', input.cursor, (key) => key.length <= 1000);
    const params: unknown[] = [caller.orgId, limit + 1];
    const where = ['c.org_id = $1'];
    const query = input.query?.trim();
    if (query) {
      params.push(containsPattern(query), lineIds(caller));
      const [q, lines] = [`$${params.length - 1}`, `$${params.length}`];
      where.push(`(c.display_name ILIKE ${q}
                   OR (${IN_VIEW(lines)} AND EXISTS (SELECT 1 FROM identities qi WHERE qi.contact_id = c.id AND qi.value ILIKE ${q})))`);
    }
    if (after) {
      params.push(after.key, after.id);
      where.push(`(lower(COALESCE(c.display_name, '')), c.id) > ($${params.length - 1}::text, $${params.length}::uuid)`);
    }
    const rows: Array<{ id: string; sort_key: string }> = await this.dataSource.query(
      `SELECT c.id, lower(COALESCE(c.display_name, '')) AS sort_key FROM contacts c
        WHERE ${where.join(' AND ')}
        ORDER BY lower(COALESCE(c.display_name, '')), c.id
        LIMIT $2`,
      params,
    );
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      contacts: await this.views(
        this.dataSource.manager,
        caller,
        page.map((r) => r.id),
      ),
      nextCursor: rows.length > limit && last ? this.cursors.encode('list_contacts', { key: last.sort_key, id: last.id }) : null,
    };
  }

  /**
   * A new contact with its identities. An identity the org already knows as an orphan (a partner
   * who wrote before) is attached to the new contact, so their threads now show this person; an
   * identity that already belongs to another contact is refused (merge_contacts joins two people).
   */
  async create(caller: Caller, input: { displayName: string; identities: NewIdentity[] }): Promise<{ contact: ContactView }> {
    const displayName = text(input.displayName, 'displayName', 200);
    const identities = input.identities.map((identity, i) => normalizeIdentity(identity, `identities[${i}]`));
    identities.forEach((identity, i) => {
      const first = identities.findIndex((other) => other.kind === identity.kind && other.value === identity.value);
      if (first !== i) throw new ValidationError(`identities[${i}] repeats identities[${first}] (${identity.value})`, `identities[${i}]`);
    });
    return this.dataSource.transaction(async (tx) => {
      const [contact]: Array<{ id: string }> = await tx.query(`INSERT INTO contacts (org_id, display_name) VALUES ($1, $2) RETURNING id`, [
        caller.orgId,
        displayName,
      ]);
      for (const [i, identity] of identities.entries()) {
        const [inserted]: Array<{ id: string }> = await tx.query(
          `INSERT INTO identities (org_id, kind, value, display_name, contact_id) VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT (org_id, kind, value) DO NOTHING RETURNING id`,
          [caller.orgId, identity.kind, identity.value, identity.displayName, contact.id],
        );
        if (inserted) continue;
        // Known already: lock it so a concurrent create or merge cannot claim it at the same time.
        const [existing]: Array<{ id: string; contact_id: string | null; contact_name: string | null }> = await tx.query(
          `SELECT i.id, i.contact_id, c.display_name AS contact_name
             FROM identities i LEFT JOIN contacts c ON c.id = i.contact_id
            WHERE i.org_id = $1 AND i.kind = $2 AND i.value = $3
              FOR UPDATE OF i`,
          [caller.orgId, identity.kind, identity.value],
        );
        if (existing.contact_id) {
          const who = existing.contact_name ? `contact ${existing.contact_id} (${existing.contact_name})` : `contact ${existing.contact_id}`;
          throw new ConflictError(
            `identities[${i}] (${identity.value}) already belongs to ${who}; add to that contact or join the two with merge_contacts`,
            `identities[${i}]`,
          );
        }
        await tx.query(`UPDATE identities SET contact_id = $2, display_name = COALESCE($3, display_name) WHERE id = $1`, [
          existing.id,
          contact.id,
          identity.displayName,
        ]);
      }
      const [view] = await this.views(tx, caller, [contact.id]);
      return { contact: view };
    });
  }

  /** Sets the given fields; a call that changes nothing leaves updatedAt as it was. */
  async update(caller: Caller, input: { contactId: string; notes?: string | null; displayName?: string }): Promise<{ contact: ContactView }> {
    if (input.notes === undefined && input.displayName === undefined) throw new ValidationError('give notes or displayName to change', 'notes');
    const displayName = input.displayName === undefined ? undefined : text(input.displayName, 'displayName', 200);
    const notes = input.notes === undefined || input.notes === null ? input.notes : input.notes.trim() || null;
    return this.dataSource.transaction(async (tx) => {
      const [updated]: Array<Array<{ id: string }>> = await tx.query(
        `UPDATE contacts c SET
                display_name = CASE WHEN $3 THEN $4 ELSE c.display_name END,
                notes = CASE WHEN $5 THEN $6 ELSE c.notes END,
                updated_at = CASE WHEN ($3 AND c.display_name IS DISTINCT FROM $4) OR ($5 AND c.notes IS DISTINCT FROM $6)
                                  THEN now() ELSE c.updated_at END
          WHERE c.id = $1 AND c.org_id = $2
          RETURNING c.id`,
        [input.contactId, caller.orgId, displayName !== undefined, displayName ?? null, notes !== undefined, notes ?? null],
      );
      if (!updated.length) throw NotFoundError.of('contact', input.contactId, 'contactId');
      const [view] = await this.views(tx, caller, [input.contactId]);
      return { contact: view };
    });
  }

  /**
   * Joins contacts into one survivor (`into`, else the oldest): every identity moves to it, it
   * keeps its display name (or takes the first other one when it has none), the notes of all are
   * joined, and the others are deleted. contact.merged is published in the same transaction.
   */
  async merge(caller: Caller, input: { contactIds: string[]; into?: string }): Promise<{ contact: ContactView; mergedContactIds: string[] }> {
    if (new Set(input.contactIds).size !== input.contactIds.length) throw new ValidationError('contactIds must not contain duplicates', 'contactIds');
    if (input.contactIds.length < 2 || input.contactIds.length > MAX_MERGE) {
      throw new ValidationError(`contactIds must list 2 to ${MAX_MERGE} contacts`, 'contactIds');
    }
    if (input.into !== undefined && !input.contactIds.includes(input.into)) throw new ValidationError('into must be one of contactIds', 'into');
    return this.dataSource.transaction(async (tx) => {
      // Locked in id order, so two merges that share contacts wait for each other instead of deadlocking.
      const locked: ContactRow[] = await tx.query(
        `SELECT id, display_name, notes, created_at, updated_at FROM contacts
          WHERE org_id = $1 AND id = ANY ($2::uuid[]) ORDER BY id FOR UPDATE`,
        [caller.orgId, input.contactIds],
      );
      const missing = input.contactIds.find((id) => !locked.some((c) => c.id === id));
      if (missing) throw NotFoundError.of('contact', missing, 'contactIds');
      const byAge = [...locked].sort((a, b) => a.created_at.getTime() - b.created_at.getTime() || a.id.localeCompare(b.id));
      const survivor = byAge.find((c) => c.id === (input.into ?? byAge[0].id))!;
      const others = byAge.filter((c) => c.id !== survivor.id);
      const mergedContactIds = input.contactIds.filter((id) => id !== survivor.id);
      const displayName = survivor.display_name ?? others.find((c) => c.display_name)?.display_name ?? null;
      const notes = [...new Set([survivor, ...others].map((c) => c.notes?.trim()).filter((n): n is string => !!n))].join('\n\n') || null;

      await tx.query(`UPDATE identities SET contact_id = $1 WHERE contact_id = ANY ($2::uuid[])`, [survivor.id, mergedContactIds]);
      await tx.query(`UPDATE contacts SET display_name = $2, notes = $3, updated_at = now() WHERE id = $1`, [survivor.id, displayName, notes]);
      await tx.query(`DELETE FROM contacts WHERE id = ANY ($1::uuid[])`, [mergedContactIds]);

      const identities = await this.identitiesOf(tx, [survivor.id]);
      await this.bus.publish(
        {
          type: 'contact.merged',
          orgId: caller.orgId,
          lineId: null, // org-wide: only endpoints scoped to all channels receive it
          data: { contact: { id: survivor.id, displayName, identities: identities.map(toIdentity) }, mergedContactIds },
        },
        tx,
      );
      const [view] = await this.views(tx, caller, [survivor.id]);
      return { contact: view, mergedContactIds };
    });
  }

  /** The contacts as the caller may see them, in the order of `ids`. */
  private async views(manager: EntityManager, caller: Caller, ids: string[]): Promise<ContactView[]> {
    if (ids.length === 0) return [];
    const rows: Array<ContactRow & { in_view: boolean }> = await manager.query(
      `SELECT c.id, c.display_name, c.notes, c.created_at, c.updated_at, ${IN_VIEW('$3')} AS in_view
         FROM contacts c WHERE c.org_id = $1 AND c.id = ANY ($2::uuid[])`,
      [caller.orgId, ids, lineIds(caller)],
    );
    const identities = await this.identitiesOf(
      manager,
      rows.filter((r) => r.in_view).map((r) => r.id),
    );
    const byId = new Map(rows.map((r) => [r.id, r]));
    return ids
      .filter((id) => byId.has(id))
      .map((id) => {
        const c = byId.get(id)!;
        return {
          id: c.id,
          displayName: c.display_name,
          notes: c.notes,
          createdAt: c.created_at.toISOString(),
          updatedAt: c.updated_at.toISOString(),
          identities: identities.filter((i) => i.contact_id === c.id).map(toIdentity),
        };
      });
  }

  private async identitiesOf(manager: EntityManager, contactIds: string[]) {
    if (contactIds.length === 0) return [];
    const rows: Array<{ id: string; kind: IdentityKind; value: string; display_name: string | null; contact_id: string }> = await manager.query(
      `SELECT id, kind, value, display_name, contact_id FROM identities WHERE contact_id = ANY ($1::uuid[]) ORDER BY created_at, id`,
      [contactIds],
    );
    return rows;
  }
}

function lineIds(caller: Caller): string[] {
  return caller.lines.map((l) => l.id);
}

function text(raw: string, field: string, max: number): string {
  const value = raw.trim();
  if (value.length === 0 || value.length > max) throw new ValidationError(`${field} must be 1 to ${max} characters (not only spaces)`, field);
  return value;
}

/** E.164 numbers as given (trimmed); email addresses lower-cased, as lines and inbound mail store them. */
function normalizeIdentity(identity: NewIdentity, field: string): { kind: IdentityKind; value: string; displayName: string | null } {
  const raw = identity.value.trim();
  const displayName = identity.displayName === undefined ? null : text(identity.displayName, `${field}.displayName`, 200);
  if (identity.kind === 'PHONE') {
    if (!E164.test(raw)) throw new ValidationError(`${field}.value must be an E.164 phone number such as +15551230001`, `${field}.value`);
    return { kind: 'PHONE', value: raw, displayName };
  }
  const value = raw.toLowerCase();
  if (!isEmail(value)) throw new ValidationError(`${field}.value must be an email address`, `${field}.value`);
  return { kind: 'EMAIL', value, displayName };
}
