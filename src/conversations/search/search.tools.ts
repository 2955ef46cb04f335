import { argumentCheck } from '../../tools/tool-arguments';
import { Principal } from '../../identity/principal';
import { cursorArgument, nextCursorResult, nullable, nullableString } from '../../tools/tool-schemas';
import { McpTool, McpToolHandler, ToolArgs } from '../../tools/tool.decorator';
import { identityRef, personConciseSchema } from '../conversation.schemas';
import { RESULT_BOUNDS } from '../../common/result-bounds';
import { SearchService } from './search.service';
import { MESSAGE_STATUSES } from '../message.entity';

const searchMessagesInput = {
  type: 'object',
  properties: {
    query: {
      type: 'string',
      minLength: 1,
      maxLength: RESULT_BOUNDS.searchQueryChars,
      description:
        'Words to find, as in a web search: every word must occur (in any form of letter case; words are not stemmed, so ' +
        '"invoice" does not find "invoices"), "quoted words" must occur together in that order, -word excludes messages ' +
        'with that word, and "or" between words finds either. At least one word that is not excluded.',
    },
    threadId: { type: 'string', format: 'uuid', description: 'Only messages of this thread (from list_threads or an event).' },
    channel: { type: 'string', enum: ['SMS', 'EMAIL'], description: 'Only SMS or only email messages. Default: both.' },
    since: { type: 'string', format: 'date-time', description: 'Only messages created at or after this time (ISO 8601, e.g. 2026-11-01T00:00:00Z).' },
    cursor: { ...cursorArgument, description: 'nextCursor from the previous page of the same search (same query and filters).' },
  },
  required: ['query'],
  additionalProperties: false,
} as const;

@McpTool({
  name: 'search_messages',
  title: 'Search messages',
  description:
    'Full-text search over the messages on the lines this key may use: email subjects, message bodies, and attachments ' +
    '(their filenames, and their text once it is extracted: after the attachment.extracted event). Best matches first, ' +
    `${RESULT_BOUNDS.searchHits} per page; pass nextCursor as cursor for more. Each hit names its message and thread, says whether ` +
    `the words matched the message or an attachment, and has a snippet of at most ${RESULT_BOUNDS.snippetChars} characters with ` +
    'the matched words in **double asterisks**. Read the whole message with get_message, an attachment with read_attachment. ' +
    `Of more than ${RESULT_BOUNDS.searchRankedMatches.toLocaleString('en-US')} matches, the newest ${RESULT_BOUNDS.searchRankedMatches.toLocaleString('en-US')} are ranked: narrow with more words, threadId or since for older mail.`,
  kind: 'read',
  idempotent: true,
  minRole: 'MEMBER',
  inputSchema: searchMessagesInput,
  outputSchema: {
    type: 'object',
    properties: {
      hits: {
        type: 'array',
        items: {
          type: 'object',
          properties: {
            messageId: { type: 'string' },
            threadId: { type: 'string' },
            channel: { type: 'string', enum: ['SMS', 'EMAIL'] },
            direction: { type: 'string', enum: ['INBOUND', 'OUTBOUND'] },
            status: { type: 'string', enum: [...MESSAGE_STATUSES] },
            createdAt: { type: 'string' },
            sentAt: nullableString,
            fromIdentity: identityRef,
            toIdentity: identityRef,
            subject: nullable({ type: 'string' } as const, "The email's subject; null for SMS."),
            person: personConciseSchema,
            matchedIn: {
              type: 'string',
              enum: ['body', 'attachment'],
              description: 'body: the message (its subject or body) matched; attachment: the attachment named in attachment matched.',
            },
            attachment: nullable(
              { type: 'object', properties: { id: { type: 'string' }, filename: { type: 'string' } }, required: ['id', 'filename'] } as const,
              'The attachment that matched (read its text with read_attachment); null when matchedIn is body.',
            ),
            snippet: {
              type: 'string',
              maxLength: RESULT_BOUNDS.snippetChars,
              description: 'Where the words matched, on one line, with each matched word in **double asterisks**; fragments are joined by " … ".',
            },
            rank: { type: 'number', minimum: 0, description: 'How well the hit matches (higher is better); only comparable within one search.' },
          },
          required: [
            'messageId',
            'threadId',
            'channel',
            'direction',
            'status',
            'createdAt',
            'sentAt',
            'fromIdentity',
            'toIdentity',
            'subject',
            'person',
            'matchedIn',
            'attachment',
            'snippet',
            'rank',
          ],
        },
      },
      nextCursor: nextCursorResult,
    },
    required: ['hits', 'nextCursor'],
  },
})
export class SearchMessagesTool implements McpToolHandler<ToolArgs<typeof searchMessagesInput>> {
  constructor(private readonly search: SearchService) {}

  execute(args: ToolArgs<typeof searchMessagesInput>, caller: Principal) {
    return this.search.find(caller, args);
  }
}

/** search_messages' argument check for the other surfaces (the web pages): the tool's own input schema. */
export const searchArguments = { find: argumentCheck(searchMessagesInput) };
