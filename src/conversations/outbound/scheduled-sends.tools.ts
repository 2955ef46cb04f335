import { argumentCheck } from '../../tools/tool-arguments';
import { Principal } from '../../identity/principal';
import { McpTool, McpToolHandler, ToolArgs } from '../../tools/tool.decorator';
import { sentMessageSchema } from '../conversation.schemas';
import { ScheduledSends } from './scheduled-sends';

const cancelScheduledInput = {
  type: 'object',
  properties: {
    messageId: {
      type: 'string',
      format: 'uuid',
      description: 'The SCHEDULED message to cancel (the id send_sms, send_email or reply_to_thread answered with sendAt).',
    },
  },
  required: ['messageId'],
  additionalProperties: false,
} as const;

@McpTool({
  name: 'cancel_scheduled_message',
  title: 'Cancel a scheduled message',
  description:
    'Cancels a message sent with sendAt that has not gone out yet: its status goes SCHEDULED → CANCELED (message.status_changed) and it ' +
    'is never sent. A message in any other status (QUEUED, SENT, FAILED, already CANCELED...) cannot be cancelled: the call is an error saying its status.',
  kind: 'write',
  idempotent: true,
  minRole: 'MEMBER',
  inputSchema: cancelScheduledInput,
  outputSchema: { type: 'object', properties: { message: sentMessageSchema.properties.message }, required: ['message'] },
})
export class CancelScheduledMessageTool implements McpToolHandler<ToolArgs<typeof cancelScheduledInput>> {
  constructor(private readonly scheduled: ScheduledSends) {}

  async execute(args: ToolArgs<typeof cancelScheduledInput>, caller: Principal) {
    return this.scheduled.cancel(caller, args.messageId);
  }
}

/** cancel_scheduled_message's argument check for the other surfaces (the thread page's Cancel): the tool's own input schema. */
export const scheduledArguments = { cancel: argumentCheck(cancelScheduledInput) };
