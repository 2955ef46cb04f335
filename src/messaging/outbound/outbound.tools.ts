import { Caller } from '../../auth/caller';
import { McpTool, McpToolHandler, ToolArgs } from '../../mcp/mcp-tool.decorator';
import { messageSchema } from '../messaging.schemas';
import { OutboundService } from './outbound.service';

const sendSmsInput = {
  type: 'object',
  properties: {
    threadId: { type: 'string', format: 'uuid' },
    identityId: {
      type: 'string',
      format: 'uuid',
      description:
        "Optional: another phone number of the thread partner's contact (an identity id from get_thread or list_contacts). Default: the thread's partner, the number the thread is with.",
    },
    smsBody: { type: 'string', minLength: 1, maxLength: 1600 },
  },
  required: ['threadId', 'smsBody'],
  additionalProperties: false,
} as const;

@McpTool({
  name: 'send_sms',
  title: 'Send an SMS',
  description:
    "Sends an SMS on a thread: to the thread's partner, or with identityId to another number of the same contact (a reply needs only threadId and smsBody). The message starts QUEUED; " +
    'message.sent and message.status_changed follow when the carrier takes it.',
  kind: 'write',
  openWorld: true,
  minRole: 'MEMBER',
  inputSchema: sendSmsInput,
  outputSchema: { type: 'object', properties: { message: messageSchema }, required: ['message'] },
})
export class SendSmsTool implements McpToolHandler<ToolArgs<typeof sendSmsInput>> {
  constructor(private readonly outbound: OutboundService) {}

  async execute(args: ToolArgs<typeof sendSmsInput>, caller: Caller) {
    return { message: await this.outbound.queueSms(caller, args) };
  }
}
