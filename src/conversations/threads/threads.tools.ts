import { argumentCheck } from '../../tools/tool-arguments';
import { Principal } from '../../identity/principal';
import { McpTool, McpToolHandler, ToolArgs } from '../../tools/tool.decorator';
import {
  attachmentRefSchema,
  labelWithConfidenceSchema,
  messageSchema,
  optOutSchema,
  personConciseSchema,
  personSchema,
  threadSummarySchema,
} from '../conversation.schemas';
import { MAX_THREADS_PAGE_SIZE, THREADS_PAGE_SIZE, ThreadsService } from './threads.service';
import { RESULT_BOUNDS, textWindowArguments } from '../../common/result-bounds';
import { cursorArgument, nextCursorResult, nullable } from '../../tools/tool-schemas';

const threadIdSchema = { type: 'string', format: 'uuid', description: 'A thread id (from list_threads or an event).' } as const;
const labelNameSchema = { type: 'string', minLength: 1, maxLength: 100 } as const;

/** Why an outbound message FAILED, on every message the thread tools show. */
const failureReasonSchema = nullable({ type: 'string' } as const, 'Why the carrier or mail server did not take the message, when status is FAILED; else null.');

const labelsResult = {
  type: 'object',
  properties: { threadId: { type: 'string' }, labels: { type: 'array', items: labelWithConfidenceSchema } },
  required: ['threadId', 'labels'],
} as const;

/** list_threads' last message: the message without its body, and a bounded preview of it. */
const messagePreviewSchema = {
  type: 'object',
  properties: {
    ...Object.fromEntries(Object.entries(messageSchema.properties).filter(([k]) => k !== 'body')),
    preview: {
      type: 'string',
      description: `The body on one line (whitespace folded), at most ${RESULT_BOUNDS.previewChars} characters; get_thread has the body.`,
    },
    truncated: { type: 'boolean', description: 'True when the preview is not the whole body.' },
    error: failureReasonSchema,
  },
  required: [...messageSchema.required.filter((k) => k !== 'body'), 'preview', 'truncated', 'error'],
} as const;

const listThreadsInput = {
  type: 'object',
  properties: {
    lineId: { type: 'string', format: 'uuid', description: 'Only threads of this line.' },
    label: { ...labelNameSchema, description: 'Only threads carrying this label.' },
    cursor: cursorArgument,
    limit: { type: 'integer', minimum: 1, maximum: MAX_THREADS_PAGE_SIZE, default: THREADS_PAGE_SIZE, description: 'How many threads per page.' },
  },
  additionalProperties: false,
} as const;

@McpTool({
  name: 'list_threads',
  title: 'List threads',
  description:
    `Conversations on the lines this key may use, newest activity first; ${THREADS_PAGE_SIZE} per page by default ` +
    `(limit up to ${MAX_THREADS_PAGE_SIZE}). Filter by lineId (from list_email_accounts / list_phone_numbers) or by label name. ` +
    `Each thread's lastMessage has a one-line preview (at most ${RESULT_BOUNDS.previewChars} characters) in place of its body. ` +
    'Pass nextCursor as cursor for the next page.',
  kind: 'read',
  idempotent: true,
  minRole: 'MEMBER',
  inputSchema: listThreadsInput,
  outputSchema: {
    type: 'object',
    properties: {
      threads: {
        type: 'array',
        items: {
          type: 'object',
          properties: {
            thread: threadSummarySchema,
            person: personConciseSchema,
            labels: { type: 'array', items: { type: 'string' } },
            lastMessage: { anyOf: [{ type: 'null' }, messagePreviewSchema] },
          },
          required: ['thread', 'person', 'labels', 'lastMessage'],
        },
      },
      nextCursor: nextCursorResult,
    },
    required: ['threads', 'nextCursor'],
  },
})
export class ListThreadsTool implements McpToolHandler<ToolArgs<typeof listThreadsInput>> {
  constructor(private readonly threads: ThreadsService) {}

  execute(args: ToolArgs<typeof listThreadsInput>, caller: Principal) {
    return this.threads.list(caller, args);
  }
}

const getThreadInput = {
  type: 'object',
  properties: {
    threadId: threadIdSchema,
    cursor: cursorArgument,
    limit: {
      type: 'integer',
      minimum: 1,
      maximum: RESULT_BOUNDS.maxThreadMessages,
      description: `Messages per page, newest first. Default ${RESULT_BOUNDS.threadMessages}.`,
    },
    maxBodyChars: {
      type: 'integer',
      minimum: 1,
      maximum: RESULT_BOUNDS.maxBodyChars,
      description: `Each message's body is cut to this many characters (truncated says when it was). Default ${RESULT_BOUNDS.bodyChars}.`,
    },
  },
  required: ['threadId'],
  additionalProperties: false,
} as const;

@McpTool({
  name: 'get_thread',
  title: 'Get a thread',
  description:
    `One thread: its partner (person with every identity; id null for an unknown partner), labels with confidence, and messages ` +
    `newest first, ${RESULT_BOUNDS.threadMessages} per page (limit up to ${RESULT_BOUNDS.maxThreadMessages}), each with its first ` +
    `${RESULT_BOUNDS.threadAttachments} attachments and attachmentCount (get_message lists up to ${RESULT_BOUNDS.messageAttachments}; ` +
    `read their text with read_attachment). Bodies are cut to ${RESULT_BOUNDS.bodyChars} characters unless maxBodyChars says otherwise; ` +
    'truncated marks a cut body. Pass nextCursor as cursor for older messages.',
  kind: 'read',
  idempotent: true,
  minRole: 'MEMBER',
  inputSchema: getThreadInput,
  outputSchema: {
    type: 'object',
    properties: {
      thread: threadSummarySchema,
      person: personSchema,
      labels: { type: 'array', items: labelWithConfidenceSchema },
      messages: {
        type: 'array',
        items: {
          ...messageSchema,
          properties: {
            ...messageSchema.properties,
            truncated: { type: 'boolean', description: 'True when body is cut to maxBodyChars.' },
            error: failureReasonSchema,
            attachments: {
              type: 'array',
              items: attachmentRefSchema,
              description: `The first ${RESULT_BOUNDS.threadAttachments}, filename and mimeType cut to ${RESULT_BOUNDS.threadAttachmentNameChars} characters.`,
            },
            attachmentCount: { type: 'integer', description: 'How many attachments the message has, listed or not.' },
          },
          required: [...messageSchema.required, 'truncated', 'error', 'attachments', 'attachmentCount'],
        },
      },
      nextCursor: nextCursorResult,
      optedOut: {
        anyOf: [{ type: 'null' }, optOutSchema],
        description:
          "An SMS thread whose partner texted STOP to the thread's line (and not START since): send_sms and reply_to_thread to them are refused. Null otherwise.",
      },
    },
    required: ['thread', 'person', 'labels', 'messages', 'nextCursor', 'optedOut'],
  },
})
export class GetThreadTool implements McpToolHandler<ToolArgs<typeof getThreadInput>> {
  constructor(private readonly threads: ThreadsService) {}

  execute(args: ToolArgs<typeof getThreadInput>, caller: Principal) {
    const { threadId, ...page } = args;
    return this.threads.get(caller, threadId, page);
  }
}

const getMessageInput = {
  type: 'object',
  properties: {
    messageId: { type: 'string', format: 'uuid', description: 'A message id (from an event, list_threads or get_thread).' },
    ...textWindowArguments('body', RESULT_BOUNDS.messageChars, RESULT_BOUNDS.maxMessageChars),
    attachmentOffset: {
      type: 'integer',
      minimum: 0,
      maximum: RESULT_BOUNDS.maxOffset,
      description: `How many attachments to skip: 0 (the default), or the nextAttachmentOffset of the previous call, for the next ${RESULT_BOUNDS.messageAttachments}.`,
    },
  },
  required: ['messageId'],
  additionalProperties: false,
} as const;

@McpTool({
  name: 'get_message',
  title: 'Get a message',
  description:
    'One message: its status (SCHEDULED, QUEUED, SENT, DELIVERED, FAILED, CANCELED for outbound; RECEIVED for inbound), sendAt when it ' +
    'was sent with one, the reason the carrier or mail ' +
    `server gave when it FAILED (error), its subject, its attachments ${RESULT_BOUNDS.messageAttachments} at a time (attachmentCount; attachmentOffset = nextAttachmentOffset for more), and its body ${RESULT_BOUNDS.messageChars} characters at a time ` +
    '(maxChars to change it): pass nextOffset as offset for the rest; nextOffset is null at the end.',
  kind: 'read',
  idempotent: true,
  minRole: 'MEMBER',
  inputSchema: getMessageInput,
  outputSchema: {
    type: 'object',
    properties: {
      message: {
        ...messageSchema,
        properties: {
          ...messageSchema.properties,
          body: { type: 'string', description: 'The body from offset, at most maxChars characters.' },
          subject: nullable({ type: 'string' } as const, "An email's subject; null for SMS."),
          error: failureReasonSchema,
          attachments: {
            type: 'array',
            items: attachmentRefSchema,
            description: `The first ${RESULT_BOUNDS.messageAttachments}, filename and mimeType cut to ${RESULT_BOUNDS.messageAttachmentNameChars} characters.`,
          },
          attachmentCount: { type: 'integer', description: 'How many attachments the message has, listed or not.' },
        },
        required: [...messageSchema.required, 'subject', 'error', 'attachments', 'attachmentCount'],
      },
      bodyLength: { type: 'integer', description: "The whole body's length in characters." },
      nextOffset: nullable({ type: 'integer' } as const, 'The offset of the next call for more of the body; null when this call reached the end.'),
      nextAttachmentOffset: nullable(
        { type: 'integer' } as const,
        'The attachmentOffset of the next call for more attachments; null when this call listed the last.',
      ),
    },
    required: ['message', 'bodyLength', 'nextOffset', 'nextAttachmentOffset'],
  },
})
export class GetMessageTool implements McpToolHandler<ToolArgs<typeof getMessageInput>> {
  constructor(private readonly threads: ThreadsService) {}

  execute(args: ToolArgs<typeof getMessageInput>, caller: Principal) {
    const { messageId, ...window } = args;
    return this.threads.message(caller, messageId, window);
  }
}

const labelThreadInput = {
  type: 'object',
  properties: {
    threadId: threadIdSchema,
    add: {
      type: 'array',
      maxItems: 50,
      description: 'Labels to put on the thread (created in the org on first use).',
      items: {
        type: 'object',
        properties: {
          name: { ...labelNameSchema, description: 'The label, e.g. "invoice"; matched exactly.' },
          confidence: { type: 'number', minimum: 0, maximum: 1, default: 1, description: 'How sure the labeller is, from 0 to 1.' },
        },
        required: ['name'],
        additionalProperties: false,
      },
    },
    remove: {
      type: 'array',
      maxItems: 50,
      items: labelNameSchema,
      description: 'Label names to take off the thread; a name the thread does not carry is ignored.',
    },
  },
  required: ['threadId'],
  additionalProperties: false,
} as const;

@McpTool({
  name: 'label_thread',
  title: 'Label a thread',
  description:
    'Adds and removes labels on a thread. Labels belong to the org and are created on first use; confidence (0..1, default 1) ' +
    'says how sure the labeller is, and adding a label the thread has sets its confidence. Later events carry the labels ' +
    "(labels) and, in verbose mode, their confidence (labelConfidence). Returns the thread's labels.",
  kind: 'write',
  idempotent: true,
  minRole: 'MEMBER',
  inputSchema: labelThreadInput,
  outputSchema: labelsResult,
})
export class LabelThreadTool implements McpToolHandler<ToolArgs<typeof labelThreadInput>> {
  constructor(private readonly threads: ThreadsService) {}

  execute({ threadId, ...change }: ToolArgs<typeof labelThreadInput>, caller: Principal) {
    return this.threads.label(caller, threadId, change);
  }
}

export const THREAD_TOOLS = [ListThreadsTool, GetThreadTool, GetMessageTool, LabelThreadTool];

/**
 * The thread tools' argument checks for the other surfaces (the web pages): the tools' own input
 * schemas, judged as the MCP registry judges them, so a page accepts exactly what the tool does.
 */
export const threadArguments = {
  list: argumentCheck(listThreadsInput),
  get: argumentCheck(getThreadInput),
  label: argumentCheck(labelThreadInput),
};
