import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { Principal } from '../../identity/principal';
import { callerLines } from '../../identity/line-access.sql';
import { KeysetPosition } from '../../common/keyset-cursor';
import { queryNamed, SqlCondition } from '../../database/sql';
import { IdentityKind } from '../conversation-vocabulary';

export interface ContactRow {
  id: string;
  display_name: string | null;
  notes: string | null;
  created_at: Date;
  updated_at: Date;
}

/** A contact with whether it is in view for the caller (see IN_VIEW). */
export type ContactViewRow = ContactRow & { in_view: boolean };

export interface ContactIdentityRow {
  id: string;
  kind: IdentityKind;
  value: string;
  display_name: string | null;
  contact_id: string;
}

/** An identity the org already knew, locked, with the contact that holds it (if any). */
export interface KnownIdentityRow {
  id: string;
  contact_id: string | null;
  contact_name: string | null;
}

/** An identity to store, normalised (ContactsService applies the rules). */
export interface IdentityInput {
  kind: IdentityKind;
  value: string;
  displayName: string | null;
}

/**
 * Whether contact `c` is in view for the caller: it has a conversation (a thread with one of its
 * identities) on a line the caller may see (callerLines), or no conversation on any line.
 * A contact whose conversations all live on other lines is still listed (contacts belong to the
 * org), but without its identities, and a search does not match their values: its addresses
 * would tell who writes to lines this key may not read. Message events reveal no more than
 * this: a thread's event carries its partner's contact with every identity.
 *
 * Scalar subqueries rather than EXISTS under OR, which the planner may run as one hashed pass over
 * every thread of the org: these probe identities_contact_idx and threads_partner_idx per contact.
 */
function inView(caller: Principal): SqlCondition {
  const scope = callerLines(caller, 'vt.line_id', 'vt.org_id');
  return {
    sql: `(
  (SELECT 1 FROM identities vi JOIN threads vt ON vt.partner_identity_id = vi.id WHERE vi.contact_id = c.id AND ${scope.sql} LIMIT 1) IS NOT NULL
  OR (SELECT 1 FROM identities vi JOIN threads vt ON vt.partner_identity_id = vi.id WHERE vi.contact_id = c.id LIMIT 1) IS NULL)`,
    parameters: scope.parameters,
  };
}

/**
 * list_contacts' optional conditions, texts that depend on no value, so each of its four statements
 * stays prepared. search: `pattern` matches the display name, or an identity's value of a contact in view.
 */
function search(caller: Principal, pattern: string): SqlCondition {
  const visible = inView(caller);
  return {
    sql: `(c.display_name ILIKE :pattern
                   OR (${visible.sql} AND EXISTS (SELECT 1 FROM identities qi WHERE qi.contact_id = c.id AND qi.value ILIKE :pattern)))`,
    parameters: { pattern, ...visible.parameters },
  };
}
const AFTER = `(lower(COALESCE(c.display_name, '')), c.id) > (:afterKey::text, :afterId::uuid)`;

/**
 * SQL of contacts and their identities. Every statement is of the caller's org: a method that
 * reads or changes contacts takes the `Principal`, or rows a method that took it answered in the same
 * transaction (a locked identity, the locked contacts of a merge). Rules live in ContactsService.
 */
@Injectable()
export class ContactsRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * Up to `limit` contacts of the caller's org, alphabetical by display name (case-insensitive),
   * then id, after the keyset position `after`. `pattern` (an ILIKE pattern) matches the display
   * name, or an identity's value of a contact in view.
   */
  page(caller: Principal, input: { pattern?: string; after?: KeysetPosition; limit: number }): Promise<Array<{ id: string; sort_key: string }>> {
    const where = ['c.org_id = :orgId'];
    const matching = input.pattern === undefined ? undefined : search(caller, input.pattern);
    if (matching) where.push(matching.sql);
    if (input.after) where.push(AFTER);
    return queryNamed(
      this.dataSource.manager,
      `SELECT c.id, lower(COALESCE(c.display_name, '')) AS sort_key FROM contacts c
        WHERE ${where.join(' AND ')}
        ORDER BY lower(COALESCE(c.display_name, '')), c.id
        LIMIT :limit`,
      {
        orgId: caller.orgId,
        limit: input.limit,
        ...matching?.parameters,
        ...(input.after && { afterKey: input.after.key, afterId: input.after.id }),
      },
    );
  }

  /** A new contact of the caller's org; answers its id. */
  async insertContact(manager: EntityManager, caller: Principal, displayName: string): Promise<string> {
    const [contact] = await queryNamed<Array<{ id: string }>>(
      manager,
      `INSERT INTO contacts (org_id, display_name) VALUES (:orgId, :displayName) RETURNING id`,
      {
        orgId: caller.orgId,
        displayName,
      },
    );
    return contact.id;
  }

  /** Stores an identity of the caller's org for the contact; false when the org knows it already (nothing written). */
  async insertIdentity(manager: EntityManager, caller: Principal, contactId: string, identity: IdentityInput): Promise<boolean> {
    const [inserted] = await queryNamed<Array<{ id: string }>>(
      manager,
      `INSERT INTO identities (org_id, kind, value, display_name, contact_id) VALUES (:orgId, :kind, :value, :displayName, :contactId)
           ON CONFLICT (org_id, kind, value) DO NOTHING RETURNING id`,
      { orgId: caller.orgId, kind: identity.kind, value: identity.value, displayName: identity.displayName, contactId },
    );
    return inserted !== undefined;
  }

  /** An identity the caller's org already knows, locked so that a concurrent create or merge cannot claim it at the same time. */
  async lockKnownIdentity(manager: EntityManager, caller: Principal, identity: IdentityInput): Promise<KnownIdentityRow> {
    const [existing] = await queryNamed<KnownIdentityRow[]>(
      manager,
      `SELECT i.id, i.contact_id, c.display_name AS contact_name
             FROM identities i LEFT JOIN contacts c ON c.id = i.contact_id
            WHERE i.org_id = :orgId AND i.kind = :kind AND i.value = :value
              FOR UPDATE OF i`,
      { orgId: caller.orgId, kind: identity.kind, value: identity.value },
    );
    return existing;
  }

  /** Gives a known identity (as lockKnownIdentity answered it, in this transaction) to the contact; a given display name replaces its own. */
  async claimIdentity(manager: EntityManager, identity: KnownIdentityRow, contactId: string, displayName: string | null): Promise<void> {
    await queryNamed(manager, `UPDATE identities SET contact_id = :contactId, display_name = COALESCE(:displayName, display_name) WHERE id = :identityId`, {
      identityId: identity.id,
      contactId,
      displayName,
    });
  }

  /**
   * Sets the given fields (undefined: unchanged) of the caller's org's contact; updated_at moves
   * only when a value changes. False when the org has no such contact.
   */
  async update(manager: EntityManager, caller: Principal, contactId: string, fields: { displayName?: string; notes?: string | null }): Promise<boolean> {
    // UPDATE ... RETURNING answers [rows, affected count].
    const [updated] = await queryNamed<[Array<{ id: string }>, number]>(
      manager,
      `UPDATE contacts c SET
                display_name = CASE WHEN :setDisplayName THEN :displayName ELSE c.display_name END,
                notes = CASE WHEN :setNotes THEN :notes ELSE c.notes END,
                updated_at = CASE WHEN (:setDisplayName AND c.display_name IS DISTINCT FROM :displayName) OR (:setNotes AND c.notes IS DISTINCT FROM :notes)
                                  THEN now() ELSE c.updated_at END
          WHERE c.id = :contactId AND c.org_id = :orgId
          RETURNING c.id`,
      {
        contactId,
        orgId: caller.orgId,
        setDisplayName: fields.displayName !== undefined,
        displayName: fields.displayName ?? null,
        setNotes: fields.notes !== undefined,
        notes: fields.notes ?? null,
      },
    );
    return updated.length > 0;
  }

  /** The caller's org's contacts among `contactIds`, locked in id order (so two merges that share contacts wait for each other instead of deadlocking). */
  lockForMerge(manager: EntityManager, caller: Principal, contactIds: string[]): Promise<ContactRow[]> {
    return queryNamed(
      manager,
      `SELECT id, display_name, notes, created_at, updated_at FROM contacts
          WHERE org_id = :orgId AND id = ANY (:contactIds::uuid[]) ORDER BY id FOR UPDATE`,
      { orgId: caller.orgId, contactIds },
    );
  }

  /**
   * Moves every identity of `merged` to `survivor`, gives the survivor its merged display name and
   * notes, and deletes the merged contacts. All of them as lockForMerge answered them, in this transaction.
   */
  async merge(manager: EntityManager, survivor: ContactRow, merged: ContactRow[], fields: { displayName: string | null; notes: string | null }): Promise<void> {
    const mergedContactIds = merged.map((c) => c.id);
    await queryNamed(manager, `UPDATE identities SET contact_id = :survivorId WHERE contact_id = ANY (:mergedContactIds::uuid[])`, {
      survivorId: survivor.id,
      mergedContactIds,
    });
    await queryNamed(manager, `UPDATE contacts SET display_name = :displayName, notes = :notes, updated_at = now() WHERE id = :survivorId`, {
      survivorId: survivor.id,
      displayName: fields.displayName,
      notes: fields.notes,
    });
    await queryNamed(manager, `DELETE FROM contacts WHERE id = ANY (:mergedContactIds::uuid[])`, { mergedContactIds });
  }

  /** The caller's org's contacts among `contactIds` (any order), each with whether it is in view for the caller. */
  viewRows(manager: EntityManager, caller: Principal, contactIds: string[]): Promise<ContactViewRow[]> {
    const visible = inView(caller);
    return queryNamed(
      manager,
      `SELECT c.id, c.display_name, c.notes, c.created_at, c.updated_at, ${visible.sql} AS in_view
         FROM contacts c WHERE c.org_id = :orgId AND c.id = ANY (:contactIds::uuid[])`,
      { orgId: caller.orgId, contactIds, ...visible.parameters },
    );
  }

  /** The identities of contacts a method above answered (so of the caller's org), oldest first. */
  async identitiesOf(manager: EntityManager, contacts: ContactRow[]): Promise<ContactIdentityRow[]> {
    if (contacts.length === 0) return [];
    return queryNamed(
      manager,
      `SELECT id, kind, value, display_name, contact_id FROM identities WHERE contact_id = ANY (:contactIds::uuid[]) ORDER BY created_at, id`,
      { contactIds: contacts.map((c) => c.id) },
    );
  }
}
