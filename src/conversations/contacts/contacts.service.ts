import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { E164 } from '../../identity/account.types';
import { Principal } from '../../identity/principal';
import { isEmailAddress } from '../../common/email-address';
import { ConflictError, NotFoundError, ValidationError } from '../../common/errors';
import { EventBus } from '../../events/event-bus';
import { IdentityData, IdentityKind } from '../conversation-vocabulary';
import { toIdentity } from '../message-data.builder';
import { containsPattern, KeysetCursors } from '../../common/keyset-cursor';
import { charLength, RESULT_BOUNDS, textWindow } from '../../common/result-bounds';
import { ContactsRepository } from './contacts.repository';
import { OptOutsService, OptOutView } from '../../opt-outs/opt-outs.service';

export const CONTACTS_PAGE_SIZE = 25;
export const MAX_CONTACTS_PAGE_SIZE = 100;
export const MAX_MERGE = 20;
/** The longest notes a contact keeps, in Unicode code points: what update_contact sets, and what merge_contacts may join. */
export const MAX_NOTES_CHARS = 10_000;

export interface ContactView {
  id: string;
  displayName: string | null;
  notes: string | null;
  /** True when `notes` is a preview (list_contacts); get_contact gives the notes whole. */
  notesTruncated: boolean;
  createdAt: string;
  updatedAt: string;
  /** Only when the contact is in view for the caller (IN_VIEW in contacts.repository.ts); otherwise empty. */
  identities: IdentityData[];
  /** Its numbers (of `identities`) that texted STOP to one of the caller's lines, by line (docs/opt-out.md). */
  optedOut: OptOutView[];
}

export interface NewIdentity {
  kind: IdentityKind;
  value: string;
  displayName?: string;
}

/**
 * Contacts (people) and their identities (phone numbers, email addresses). Contacts belong to
 * the org; an identity first seen on an inbound message is an orphan until a contact claims it.
 */
@Injectable()
export class ContactsService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly contacts: ContactsRepository,
    private readonly bus: EventBus,
    private readonly cursors: KeysetCursors,
    private readonly optOuts: OptOutsService,
  ) {}

  /** Alphabetical by display name (case-insensitive), then id; keyset paged. */
  async list(caller: Principal, input: { query?: string; cursor?: string; limit?: number }): Promise<{ contacts: ContactView[]; nextCursor: string | null }> {
    const limit = input.limit ?? CONTACTS_PAGE_SIZE;
    const after = input.cursor === undefined ? undefined : this.cursors.decode('list_contacts', input.cursor, (key) => key.length <= 1000);
    const query = input.query?.trim();
    const rows = await this.contacts.page(caller, { pattern: query ? containsPattern(query) : undefined, after, limit: limit + 1 });
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      contacts: await this.views(
        this.dataSource.manager,
        caller,
        page.map((r) => r.id),
        RESULT_BOUNDS.contactNotesChars,
      ),
      nextCursor: rows.length > limit && last ? this.cursors.encode('list_contacts', { key: last.sort_key, id: last.id }) : null,
    };
  }

  /** One contact of the caller's org, with its notes and the identities the caller may see (as list_contacts shows it); read with `manager` when given (the thread page's snapshot). */
  async get(caller: Principal, contactId: string, manager: EntityManager = this.dataSource.manager): Promise<{ contact: ContactView }> {
    const [view] = await this.views(manager, caller, [contactId]);
    if (!view) throw NotFoundError.of('contact', contactId, 'contactId');
    return { contact: view };
  }

  /**
   * A new contact with its identities. An identity the org already knows as an orphan (a partner
   * who wrote before) is attached to the new contact, so their threads now show this person; an
   * identity that already belongs to another contact is refused (merge_contacts joins two people).
   */
  async create(caller: Principal, input: { displayName: string; identities: NewIdentity[] }): Promise<{ contact: ContactView }> {
    const displayName = text(input.displayName, 'displayName', 200);
    const identities = input.identities.map((identity, i) => normalizeIdentity(identity, `identities[${i}]`));
    identities.forEach((identity, i) => {
      const first = identities.findIndex((other) => other.kind === identity.kind && other.value === identity.value);
      if (first !== i) throw new ValidationError(`identities[${i}] repeats identities[${first}] (${identity.value})`, `identities[${i}]`);
    });
    return this.dataSource.transaction(async (tx) => {
      const contactId = await this.contacts.insertContact(tx, caller, displayName);
      for (const [i, identity] of identities.entries()) {
        if (await this.contacts.insertIdentity(tx, caller, contactId, identity)) continue;
        // Known already: locked, so a concurrent create or merge cannot claim it at the same time.
        const existing = await this.contacts.lockKnownIdentity(tx, caller, identity);
        if (existing.contact_id) {
          const who = existing.contact_name ? `contact ${existing.contact_id} (${existing.contact_name})` : `contact ${existing.contact_id}`;
          throw new ConflictError(
            `identities[${i}] (${identity.value}) already belongs to ${who}; add to that contact or join the two with merge_contacts`,
            `identities[${i}]`,
          );
        }
        await this.contacts.claimIdentity(tx, existing, contactId, identity.displayName);
      }
      const [view] = await this.views(tx, caller, [contactId]);
      return { contact: view };
    });
  }

  /** Sets the given fields; a call that changes nothing leaves updatedAt as it was. */
  async update(caller: Principal, input: { contactId: string; notes?: string | null; displayName?: string }): Promise<{ contact: ContactView }> {
    if (input.notes === undefined && input.displayName === undefined) throw new ValidationError('give notes or displayName to change', 'notes');
    const displayName = input.displayName === undefined ? undefined : text(input.displayName, 'displayName', 200);
    const notes = input.notes === undefined || input.notes === null ? input.notes : input.notes.trim() || null;
    return this.dataSource.transaction(async (tx) => {
      const updated = await this.contacts.update(tx, caller, input.contactId, { displayName, notes });
      if (!updated) throw NotFoundError.of('contact', input.contactId, 'contactId');
      const [view] = await this.views(tx, caller, [input.contactId]);
      return { contact: view };
    });
  }

  /**
   * Joins contacts into one survivor (`into`, else the oldest): every identity moves to it, it
   * keeps its display name (or takes the first other one when it has none), the notes of all are
   * joined, and the others are deleted. contact.merged is published in the same transaction.
   */
  async merge(caller: Principal, input: { contactIds: string[]; into?: string }): Promise<{ contact: ContactView; mergedContactIds: string[] }> {
    if (new Set(input.contactIds).size !== input.contactIds.length) throw new ValidationError('contactIds must not contain duplicates', 'contactIds');
    if (input.contactIds.length < 2 || input.contactIds.length > MAX_MERGE) {
      throw new ValidationError(`contactIds must list 2 to ${MAX_MERGE} contacts`, 'contactIds');
    }
    if (input.into !== undefined && !input.contactIds.includes(input.into)) throw new ValidationError('into must be one of contactIds', 'into');
    return this.dataSource.transaction(async (tx) => {
      const locked = await this.contacts.lockForMerge(tx, caller, input.contactIds);
      const missing = input.contactIds.find((id) => !locked.some((c) => c.id === id));
      if (missing) throw NotFoundError.of('contact', missing, 'contactIds');
      const byAge = [...locked].sort((a, b) => a.created_at.getTime() - b.created_at.getTime() || a.id.localeCompare(b.id));
      const survivor = byAge.find((c) => c.id === (input.into ?? byAge[0].id))!;
      const others = byAge.filter((c) => c.id !== survivor.id);
      const mergedContactIds = input.contactIds.filter((id) => id !== survivor.id);
      const displayName = survivor.display_name ?? others.find((c) => c.display_name)?.display_name ?? null;
      const notes = [...new Set([survivor, ...others].map((c) => c.notes?.trim()).filter((n): n is string => !!n))].join('\n\n') || null;
      const notesLength = notes === null ? 0 : charLength(notes);
      if (notesLength > MAX_NOTES_CHARS) {
        // Refused rather than cut: a merge must not lose what someone wrote about the person.
        throw new ValidationError(
          `the notes of these contacts joined would be ${notesLength} characters, more than the ${MAX_NOTES_CHARS} a contact keeps; shorten them with update_contact, then merge`,
          'contactIds',
        );
      }

      await this.contacts.merge(tx, survivor, others, { displayName, notes });

      const identities = await this.contacts.identitiesOf(tx, [survivor]);
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

  /** The contacts as the caller may see them, in the order of `ids`; notes cut to `notesChars` when given. */
  private async views(manager: EntityManager, caller: Principal, ids: string[], notesChars?: number): Promise<ContactView[]> {
    if (ids.length === 0) return [];
    const rows = await this.contacts.viewRows(manager, caller, ids);
    const identities = await this.contacts.identitiesOf(
      manager,
      rows.filter((r) => r.in_view),
    );
    const byId = new Map(rows.map((r) => [r.id, r]));
    const phones = identities.filter((i) => i.kind === 'PHONE').map((i) => i.value);
    const optedOut = await this.optOuts.optOutsOf(
      manager,
      caller.orgId,
      phones,
      caller.lines.map((l) => l.id),
    );
    return ids
      .filter((id) => byId.has(id))
      .map((id) => {
        const c = byId.get(id)!;
        const notes = c.notes === null || notesChars === undefined ? c.notes : textWindow(c.notes, 0, notesChars).window;
        return {
          id: c.id,
          displayName: c.display_name,
          notes,
          notesTruncated: notes !== c.notes, // a prefix, so shorter exactly when cut
          createdAt: c.created_at.toISOString(),
          updatedAt: c.updated_at.toISOString(),
          identities: identities.filter((i) => i.contact_id === c.id).map(toIdentity),
          optedOut: optedOut.filter((o) => identities.some((i) => i.contact_id === c.id && i.kind === 'PHONE' && i.value === o.number)),
        };
      });
  }
}

function text(raw: string, field: string, max: number): string {
  const value = raw.trim();
  if (value.length === 0 || charLength(value) > max) throw new ValidationError(`${field} must be 1 to ${max} characters (not only spaces)`, field);
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
  if (!isEmailAddress(value)) throw new ValidationError(`${field}.value must be an email address`, `${field}.value`);
  return { kind: 'EMAIL', value, displayName };
}
