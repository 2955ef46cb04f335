import { Caller } from '../../auth/caller';
import { McpTool, McpToolHandler, ToolArgs } from '../../mcp/mcp-tool.decorator';
import { attachmentRefSchema, labelWithConfidenceSchema, messageSchema, personConciseSchema, personSchema, threadSummarySchema } from '../messaging.schemas';
import { MAX_THREADS_PAGE_SIZE, MESSAGES_PAGE_SIZE, THREADS_PAGE_SIZE, ThreadsService } from './threads.service';
import { cursorArgument, nextCursorResult } from '../../mcp/common-schemas';

const threadIdSchema = { type: 'string', format: 'uuid', description: 'A thread id (from list_threads or an event).' } as const;
const labelNameSchema = { type: 'string', minLength: 1, maxLength: 100 } as const;

const labelsResult = {
  type: 'object',
  properties: { threadId: { type: 'string' }, labels: { type: 'array', items: labelWithConfidenceSchema } },
  required: ['threadId', 'labels'],
} as const;

const listThreadsInput = {
  type: 'object',
  properties: {
    lineId: { type: 'string', format: 'uuid', description: 'Only threads of this line.' },
    label: { ...labelNameSchema, description: 'Only threads carrying this label.' },
    cursor: cursorArgument,
    limit: { type: 'integer', minimum: 1, maximum: MAX_THREADS_PAGE_SIZE, default: THREADS_PAGE_SIZE },
  },
  additionalProperties: false,
} as const;

@McpTool({
  name: 'list_threads',
  title: 'List threads',
  description:
    `Conversations on the lines this key may use, newest activity first; ${THREADS_PAGE_SIZE} per page by default ` +
    `(limit up to ${MAX_THREADS_PAGE_SIZE}). Filter by lineId (from list_email_accounts / list_phone_numbers) or by label name. ` +
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
            lastMessage: { anyOf: [{ type: 'null' }, messageSchema] },
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

  execute(args: ToolArgs<typeof listThreadsInput>, caller: Caller) {
    return this.threads.list(caller, args);
  }
}

const getThreadInput = {
  type: 'object',
  properties: { threadId: threadIdSchema, cursor: cursorArgument },
  required: ['threadId'],
  additionalProperties: false,
} as const;

@McpTool({
  name: 'get_thread',
  title: 'Get a thread',
  description:
    `One thread: its partner (person with every identity; id null for an unknown partner), labels with confidence, and messages ` +
    `newest first, ${MESSAGES_PAGE_SIZE} per page, each with its attachments (read their text with read_attachment). ` +
    'Pass nextCursor as cursor for older messages.',
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
          properties: { ...messageSchema.properties, attachments: { type: 'array', items: attachmentRefSchema } },
          required: [...messageSchema.required, 'attachments'],
        },
      },
      nextCursor: nextCursorResult,
    },
    required: ['thread', 'person', 'labels', 'messages', 'nextCursor'],
  },
})
export class GetThreadTool implements McpToolHandler<ToolArgs<typeof getThreadInput>> {
  constructor(private readonly threads: ThreadsService) {}

  execute(args: ToolArgs<typeof getThreadInput>, caller: Caller) {
    return this.threads.get(caller, args.threadId, args.cursor);
  }
}

const labelThreadInput = {
  type: 'object',
  properties: {
    threadId: threadIdSchema,
    add: {
      type: 'array',
      maxItems: 50,
      items: {
        type: 'object',
        properties: { name: labelNameSchema, confidence: { type: 'number', minimum: 0, maximum: 1, default: 1 } },
        required: ['name'],
        additionalProperties: false,
      },
    },
    remove: { type: 'array', maxItems: 50, items: labelNameSchema },
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

  execute({ threadId, ...change }: ToolArgs<typeof labelThreadInput>, caller: Caller) {
    return this.threads.label(caller, threadId, change);
  }
}

export const THREAD_TOOLS = [ListThreadsTool, GetThreadTool, LabelThreadTool];
