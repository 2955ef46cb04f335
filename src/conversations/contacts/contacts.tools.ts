import { argumentCheck } from '../../tools/tool-arguments';
import { Principal } from '../../identity/principal';
import { McpTool, McpToolHandler, ToolArgs } from '../../tools/tool.decorator';
import { contactSchema } from '../conversation.schemas';
import { RESULT_BOUNDS } from '../../common/result-bounds';
import { CONTACTS_PAGE_SIZE, ContactsService, MAX_CONTACTS_PAGE_SIZE, MAX_MERGE, MAX_NOTES_CHARS } from './contacts.service';
import { cursorArgument, nextCursorResult, nullable } from '../../tools/tool-schemas';

const contactIdSchema = {
  type: 'string',
  format: 'uuid',
  description: 'A contact id (from list_contacts, create_contact or a person id in an event).',
} as const;
const contactResult = { type: 'object', properties: { contact: contactSchema }, required: ['contact'] } as const;
const VISIBILITY = 'Contacts belong to the org; identities are shown when the contact has a conversation on a line this key may use, or none on any line.';

const listContactsInput = {
  type: 'object',
  properties: {
    query: {
      type: 'string',
      minLength: 1,
      maxLength: 200,
      description: "Part of a display name or of an identity's value (phone number, email address), any case.",
    },
    cursor: cursorArgument,
    limit: { type: 'integer', minimum: 1, maximum: MAX_CONTACTS_PAGE_SIZE, default: CONTACTS_PAGE_SIZE, description: 'How many contacts per page.' },
  },
  additionalProperties: false,
} as const;

@McpTool({
  name: 'list_contacts',
  title: 'List contacts',
  description:
    `The org's contacts with their identities, alphabetically; ${CONTACTS_PAGE_SIZE} per page by default (limit up to ${MAX_CONTACTS_PAGE_SIZE}). ` +
    `query matches part of a display name or of an identity's value (phone number, email address). ${VISIBILITY} ` +
    `notes are cut to their first ${RESULT_BOUNDS.contactNotesChars} characters, with notesTruncated true when cut: get_contact gives them whole. ` +
    'Pass nextCursor as cursor for the next page.',
  kind: 'read',
  idempotent: true,
  minRole: 'MEMBER',
  inputSchema: listContactsInput,
  outputSchema: {
    type: 'object',
    properties: { contacts: { type: 'array', items: contactSchema }, nextCursor: nextCursorResult },
    required: ['contacts', 'nextCursor'],
  },
})
export class ListContactsTool implements McpToolHandler<ToolArgs<typeof listContactsInput>> {
  constructor(private readonly contacts: ContactsService) {}

  execute(args: ToolArgs<typeof listContactsInput>, caller: Principal) {
    return this.contacts.list(caller, args);
  }
}

const getContactInput = {
  type: 'object',
  properties: { contactId: contactIdSchema },
  required: ['contactId'],
  additionalProperties: false,
} as const;

@McpTool({
  name: 'get_contact',
  title: 'Get a contact',
  description:
    `One contact of the org: display name, notes (whole) and identities (phone numbers, email addresses), as list_contacts shows it. ${VISIBILITY} ` +
    'A person id of an event or of get_thread (when not null) is a contact id; an id of another org reads as not found.',
  kind: 'read',
  idempotent: true,
  minRole: 'MEMBER',
  inputSchema: getContactInput,
  outputSchema: contactResult,
})
export class GetContactTool implements McpToolHandler<ToolArgs<typeof getContactInput>> {
  constructor(private readonly contacts: ContactsService) {}

  execute(args: ToolArgs<typeof getContactInput>, caller: Principal) {
    return this.contacts.get(caller, args.contactId);
  }
}

const createContactInput = {
  type: 'object',
  properties: {
    displayName: { type: 'string', minLength: 1, maxLength: 200, description: 'How the person is called, e.g. "Ada Lovelace".' },
    identities: {
      type: 'array',
      minItems: 1,
      maxItems: 20,
      description: "The person's phone numbers and email addresses, 1 to 20.",
      items: {
        type: 'object',
        properties: {
          kind: { type: 'string', enum: ['PHONE', 'EMAIL'], description: 'PHONE for an E.164 number, EMAIL for an email address.' },
          value: { type: 'string', minLength: 1, maxLength: 320, description: 'An E.164 number (+15551230001) or an email address.' },
          displayName: { type: 'string', minLength: 1, maxLength: 200, description: 'How this address names the person, e.g. the email display name.' },
        },
        required: ['kind', 'value'],
        additionalProperties: false,
      },
    },
  },
  required: ['displayName', 'identities'],
  additionalProperties: false,
} as const;

@McpTool({
  name: 'create_contact',
  title: 'Create a contact',
  description:
    'Creates a contact (a person) with phone numbers (E.164) and email addresses (stored lower-case). An identity the org already ' +
    'knows as an unknown partner is attached to the new contact, so their threads and later events show this person. An identity ' +
    'that already belongs to another contact is refused: join the two with merge_contacts.',
  kind: 'write',
  minRole: 'MEMBER',
  inputSchema: createContactInput,
  outputSchema: contactResult,
})
export class CreateContactTool implements McpToolHandler<ToolArgs<typeof createContactInput>> {
  constructor(private readonly contacts: ContactsService) {}

  execute(args: ToolArgs<typeof createContactInput>, caller: Principal) {
    return this.contacts.create(caller, args);
  }
}

const updateContactInput = {
  type: 'object',
  properties: {
    contactId: contactIdSchema,
    notes: nullable(
      { type: 'string', maxLength: MAX_NOTES_CHARS } as const,
      'Free text about the person, replacing the notes there were; null or blank clears them.',
    ),
    displayName: { type: 'string', minLength: 1, maxLength: 200, description: 'The new display name.' },
  },
  required: ['contactId'],
  additionalProperties: false,
} as const;

@McpTool({
  name: 'update_contact',
  title: 'Update a contact',
  description: "Sets a contact's notes and/or display name. notes null (or blank) clears the notes.",
  kind: 'write',
  overwrites: true,
  idempotent: true,
  minRole: 'MEMBER',
  inputSchema: updateContactInput,
  outputSchema: contactResult,
})
export class UpdateContactTool implements McpToolHandler<ToolArgs<typeof updateContactInput>> {
  constructor(private readonly contacts: ContactsService) {}

  execute(args: ToolArgs<typeof updateContactInput>, caller: Principal) {
    return this.contacts.update(caller, args);
  }
}

const mergeContactsInput = {
  type: 'object',
  properties: {
    contactIds: {
      type: 'array',
      minItems: 2,
      maxItems: MAX_MERGE,
      uniqueItems: true,
      items: contactIdSchema,
      description: `The contacts who are the same person, 2 to ${MAX_MERGE}.`,
    },
    into: { ...contactIdSchema, description: 'The contact that survives; one of contactIds. Default: the oldest.' },
  },
  required: ['contactIds'],
  additionalProperties: false,
} as const;

@McpTool({
  name: 'merge_contacts',
  title: 'Merge contacts',
  description:
    'Joins 2 to 20 contacts who are the same person into one: the survivor (into, else the oldest) takes every identity, keeps its ' +
    'display name (or takes one from the others when it has none) and the notes of all; the other contacts are deleted and their ' +
    `ids stop existing. Refused, changing nothing, when the joined notes would pass the ${MAX_NOTES_CHARS} characters a contact keeps. ` +
    'Publishes contact.merged (to webhooks scoped to all channels). Irreversible.',
  kind: 'destructive',
  minRole: 'MEMBER',
  inputSchema: mergeContactsInput,
  outputSchema: {
    type: 'object',
    properties: { contact: contactSchema, mergedContactIds: { type: 'array', items: { type: 'string' } } },
    required: ['contact', 'mergedContactIds'],
  },
})
export class MergeContactsTool implements McpToolHandler<ToolArgs<typeof mergeContactsInput>> {
  constructor(private readonly contacts: ContactsService) {}

  execute(args: ToolArgs<typeof mergeContactsInput>, caller: Principal) {
    return this.contacts.merge(caller, args);
  }
}

export const CONTACT_TOOLS = [ListContactsTool, GetContactTool, CreateContactTool, UpdateContactTool, MergeContactsTool];

/** The contact tools' argument checks for the other surfaces (the web pages): the tools' own input schemas. */
export const contactArguments = { create: argumentCheck(createContactInput), update: argumentCheck(updateContactInput) };
