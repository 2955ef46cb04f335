import { Principal } from '../../identity/principal';
import { McpTool, McpToolHandler, ToolArgs } from '../../tools/tool.decorator';
import { cursorArgument, nextCursorResult } from '../../tools/tool-schemas';
import { LABELS_PAGE_SIZE, ThreadsService } from './threads.service';

const listLabelsInput = {
  type: 'object',
  properties: { cursor: cursorArgument },
  additionalProperties: false,
} as const;

@McpTool({
  name: 'list_labels',
  title: 'List labels',
  description:
    `The org's labels, by name, ${LABELS_PAGE_SIZE} per page; pass nextCursor as cursor for the next page. A label is listed when a thread ` +
    'on a line this key may use carries it, or when no thread carries it; a label found only on other lines is not. ' +
    'Use a name with list_threads (label) to find its threads, or with label_thread to put it on one.',
  kind: 'read',
  idempotent: true,
  minRole: 'MEMBER',
  inputSchema: listLabelsInput,
  outputSchema: {
    type: 'object',
    properties: {
      labels: {
        type: 'array',
        items: { type: 'object', properties: { id: { type: 'string' }, name: { type: 'string' } }, required: ['id', 'name'] },
      },
      nextCursor: nextCursorResult,
    },
    required: ['labels', 'nextCursor'],
  },
})
export class ListLabelsTool implements McpToolHandler<ToolArgs<typeof listLabelsInput>> {
  constructor(private readonly threads: ThreadsService) {}

  execute(args: ToolArgs<typeof listLabelsInput>, caller: Principal) {
    return this.threads.listLabels(caller, args);
  }
}

export const LABEL_TOOLS = [ListLabelsTool];
