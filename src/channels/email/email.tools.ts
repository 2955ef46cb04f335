import { Principal } from '../../identity/principal';
import { McpTool, McpToolHandler, ToolArgs } from '../../tools/tool.decorator';
import { idempotencyKeyProperty, sentMessageSchema } from '../../conversations/conversation.schemas';
import { EmailOutboundService } from './email-outbound.service';
import { sendAtProperty } from '../../conversations/outbound/send-at';

const sendEmailInput = {
  type: 'object',
  properties: {
    threadId: {
      type: 'string',
      format: 'uuid',
      description: 'Reply on this email thread, to its partner, from its own account. Give exactly one of threadId and to.',
    },
    to: {
      type: 'string',
      format: 'email',
      maxLength: 254,
      description: 'Start a new thread with this address. Give exactly one of threadId and to; with to, subject is required.',
    },
    fromAccountId: {
      type: 'string',
      format: 'uuid',
      description:
        'The email account (a line id from list_email_accounts) a new thread is sent from. Required with to when this key may use ' +
        "more than one email account; optional with one. Leave it out with threadId: a reply goes from the thread's own account.",
    },
    subject: {
      type: 'string',
      maxLength: 998,
      description: 'Required with to. With threadId it is optional and replaces "Re: <thread subject>".',
    },
    body: { type: 'string', minLength: 1, maxLength: 100_000, description: 'The plain-text body, not blank; at most 100,000 characters.' },
    readReceipt: { type: 'boolean', default: false, description: 'Track opens with a 1x1 pixel (email.opened).' },
    sendAt: sendAtProperty,
    idempotencyKey: idempotencyKeyProperty,
  },
  required: ['body'],
  additionalProperties: false,
} as const;

@McpTool({
  name: 'send_email',
  title: 'Send an email',
  description:
    'Sends an email. Give threadId to reply on an email thread (to the thread\'s partner, subject "Re: <thread subject>" unless ' +
    'subject is given, threaded with In-Reply-To/References), or to (an address) with subject to start a new thread, from ' +
    'fromAccountId (an email account id from list_email_accounts; required when the key may use more than one). With ' +
    'readReceipt the email carries an HTML part with a tracking pixel, and email.opened fires for each distinct open. The ' +
    'message starts QUEUED; message.sent and message.status_changed follow when the mail server takes it. With sendAt it is ' +
    'SCHEDULED until then (cancel_scheduled_message cancels it). With idempotencyKey, a repeated call sends nothing.',
  kind: 'write',
  openWorld: true,
  draftable: true,
  minRole: 'MEMBER',
  inputSchema: sendEmailInput,
  outputSchema: sentMessageSchema,
})
export class SendEmailTool implements McpToolHandler<ToolArgs<typeof sendEmailInput>> {
  constructor(private readonly email: EmailOutboundService) {}

  async execute(args: ToolArgs<typeof sendEmailInput>, caller: Principal) {
    return this.email.queueEmail(caller, args);
  }
}
