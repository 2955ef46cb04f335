import { argumentCheck } from '../../tools/tool-arguments';
import { E164 } from '../../identity/account.types';
import { Principal } from '../../identity/principal';
import { McpTool, McpToolHandler, ToolArgs } from '../../tools/tool.decorator';
import { idempotencyKeyProperty, sentMessageSchema } from '../conversation.schemas';
import { OutboundService } from './outbound.service';
import { BODY_MAX, SMS_BODY_MAX } from './reply-body';
import { sendAtProperty } from './send-at';

const smsTextSchema = { type: 'string', minLength: 1, maxLength: SMS_BODY_MAX } as const;

const sendSmsInput = {
  type: 'object',
  properties: {
    threadId: {
      type: 'string',
      format: 'uuid',
      description: 'The SMS thread to send on (from list_threads, or threadId in a message.* event). Give threadId or to, not both.',
    },
    identityId: {
      type: 'string',
      format: 'uuid',
      description:
        "Optional, with threadId: another phone number of the thread partner's contact (an identity id from get_thread or list_contacts). Default: the thread's partner, the number the thread is with.",
    },
    to: {
      type: 'string',
      pattern: E164.source,
      description:
        "In place of threadId, to text a number (E.164, such as +14155550123) whether or not you have a thread with it: the SMS goes on the line's thread with that number, made if there is none (thread.created).",
    },
    lineId: {
      type: 'string',
      format: 'uuid',
      description: 'Optional, with to: the phone line to send from (an id from list_phone_numbers). Needed when this key may use more than one.',
    },
    from: { type: 'string', pattern: E164.source, description: 'Optional, with to: the phone line to send from, by its number, in place of lineId.' },
    smsBody: { ...smsTextSchema, description: `The text to send, not blank; at most ${SMS_BODY_MAX} characters. Give smsBody or body, not both.` },
    body: { ...smsTextSchema, description: 'The same as smsBody, by the name reply_to_thread and send_email use.' },
    sendAt: sendAtProperty,
    idempotencyKey: idempotencyKeyProperty,
  },
  additionalProperties: false,
} as const;

@McpTool({
  name: 'send_sms',
  title: 'Send an SMS',
  description:
    "Sends an SMS: on a thread (threadId) to the thread's partner, or with identityId to another number of the same contact; or to a number (to), " +
    'from one of your phone lines (lineId or from; not needed when you have one), starting the thread when there is none. The text is smsBody or body. ' +
    'The message starts QUEUED; message.sent and message.status_changed follow when the carrier takes it. With sendAt it is SCHEDULED until ' +
    'then (cancel_scheduled_message cancels it). With idempotencyKey, a repeated call sends nothing.',
  kind: 'write',
  openWorld: true,
  draftable: true,
  minRole: 'MEMBER',
  inputSchema: sendSmsInput,
  outputSchema: sentMessageSchema,
})
export class SendSmsTool implements McpToolHandler<ToolArgs<typeof sendSmsInput>> {
  constructor(private readonly outbound: OutboundService) {}

  async execute(args: ToolArgs<typeof sendSmsInput>, caller: Principal) {
    return this.outbound.queueSms(caller, { tool: 'send_sms', args });
  }
}

const replyToThreadInput = {
  type: 'object',
  properties: {
    threadId: { type: 'string', format: 'uuid', description: 'The thread to answer: its channel (SMS or email) and partner decide where the reply goes.' },
    body: {
      type: 'string',
      minLength: 1,
      maxLength: BODY_MAX,
      description: `The plain-text reply, not blank; at most ${SMS_BODY_MAX} characters on an SMS thread.`,
    },
    sendAt: sendAtProperty,
    idempotencyKey: idempotencyKeyProperty,
  },
  required: ['threadId', 'body'],
  additionalProperties: false,
} as const;

@McpTool({
  name: 'reply_to_thread',
  title: 'Reply on a thread',
  description:
    "Replies to the thread's partner on the thread's own channel, from the thread's own line: an SMS on an SMS thread; on an email " +
    'thread an email with subject "Re: <thread subject>", threaded with In-Reply-To/References. The message starts QUEUED; ' +
    'message.sent and message.status_changed follow. With sendAt it is SCHEDULED until then (cancel_scheduled_message cancels it). ' +
    'With idempotencyKey, a repeated call sends nothing.',
  kind: 'write',
  openWorld: true,
  draftable: true,
  minRole: 'MEMBER',
  inputSchema: replyToThreadInput,
  outputSchema: sentMessageSchema,
})
export class ReplyToThreadTool implements McpToolHandler<ToolArgs<typeof replyToThreadInput>> {
  constructor(private readonly outbound: OutboundService) {}

  async execute(args: ToolArgs<typeof replyToThreadInput>, caller: Principal) {
    return this.outbound.queueThreadReply(caller, { tool: 'reply_to_thread', args });
  }
}

/** reply_to_thread's argument check for the other surfaces (the web pages): the tool's own input schema. */
export const outboundArguments = { reply: argumentCheck(replyToThreadInput) };
