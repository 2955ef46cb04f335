import { randomBytes } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { normalizeAddress } from '../../identity/account.types';
import { Principal } from '../../identity/principal';
import { ValidationError } from '../../common/errors';
import { AppConfig } from '../../config/app-config';
import { APP_CONFIG } from '../../config/config.module';
import { OutboundRepository } from '../../conversations/outbound/outbound.repository';
import { originOf } from '../../conversations/outbound/send-origin';
import { OutboundService, SendOutcome } from '../../conversations/outbound/outbound.service';
import { sendingLine } from '../../conversations/outbound/sending-line';
import { ThreadAccessRepository } from '../../conversations/threads/thread-access.repository';
import { newMessageId, pixelUrl, replyReferences, replySubject, trackedHtml } from '../../conversations/outbound/email-format';
import { EmailMessagesRepository } from './email-messages.repository';

export interface SendEmailInput {
  threadId?: string;
  to?: string;
  fromAccountId?: string;
  subject?: string;
  body: string;
  readReceipt?: boolean;
  idempotencyKey?: string;
  sendAt?: string;
}

/** Where a new email goes from and to, and what it answers. */
interface Route {
  orgId: string;
  threadId: string;
  lineId: string;
  from: string;
  to: string;
  subject: string | null;
  inReplyTo: string | null;
  references: string[];
  threadCreated: boolean;
}

/**
 * send_email: a QUEUED email, either a reply on an email thread or the first message of a new
 * thread to an address, from an email line the caller may use. The Bull hand-off job sends it.
 */
@Injectable()
export class EmailOutboundService {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly outbound: OutboundService,
    private readonly outboundMessages: OutboundRepository,
    private readonly emailMessages: EmailMessagesRepository,
    private readonly threadAccess: ThreadAccessRepository,
  ) {}

  async queueEmail(caller: Principal, input: SendEmailInput): Promise<SendOutcome> {
    if ((input.threadId === undefined) === (input.to === undefined)) {
      throw new ValidationError('give exactly one of threadId (reply on a thread) or to (start a new thread)', input.threadId ? 'to' : 'threadId');
    }
    if (input.body.trim().length === 0) throw new ValidationError('body must not be empty', 'body');
    return this.outbound.send(caller, { tool: 'send_email', args: { ...input } }, async (tx, sendAt) => {
      const route = input.threadId !== undefined ? await this.reply(tx, caller, input.threadId, input) : await this.newThread(tx, caller, input);
      const trackingToken = input.readReceipt ? randomBytes(24).toString('base64url') : null;
      const id = await this.outbound.insertQueued(tx, {
        orgId: route.orgId,
        threadId: route.threadId,
        lineId: route.lineId,
        channel: 'EMAIL',
        body: input.body,
        html: trackingToken ? trackedHtml(input.body, pixelUrl(this.config.publicBaseUrl, trackingToken)) : null,
        subject: route.subject,
        from: { value: route.from, kind: 'EMAIL' },
        to: { value: route.to, kind: 'EMAIL' },
        readReceipt: input.readReceipt ?? false,
        trackingToken,
        headerMessageId: newMessageId(route.from),
        inReplyTo: route.inReplyTo,
        references: route.references,
        origin: originOf(caller),
        sendAt,
      });
      if (route.threadCreated) await this.outbound.threadStarted(tx, originOf(caller), id, route.orgId, route.lineId);
      return id;
    });
  }

  /** A reply to the thread's partner, answering the thread's latest message that has a Message-ID. */
  private async reply(tx: EntityManager, caller: Principal, threadId: string, input: SendEmailInput): Promise<Route> {
    const thread = await this.threadAccess.threadForCaller(tx, caller, threadId);
    if (thread.channel !== 'EMAIL') throw new ValidationError(`thread ${threadId} is an SMS thread; use send_sms`, 'threadId');
    if (input.fromAccountId !== undefined && input.fromAccountId !== thread.line_id) {
      throw new ValidationError(`a reply goes from the thread's own email account ${thread.line_id}; leave fromAccountId out`, 'fromAccountId');
    }
    const partner = await this.outboundMessages.partner(tx, thread);
    if (partner.kind !== 'EMAIL') throw new ValidationError(`the partner of thread ${threadId} has no email address`, 'threadId');
    const parent = await this.outboundMessages.latestHeaders(tx, thread);
    return {
      orgId: caller.orgId,
      threadId: thread.id,
      lineId: thread.line_id,
      from: thread.line_address,
      to: partner.value,
      subject: input.subject ?? replySubject(thread.subject),
      inReplyTo: parent?.header_message_id ?? null,
      references: parent
        ? replyReferences({ messageId: parent.header_message_id, references: parent.header_references, inReplyTo: parent.header_in_reply_to })
        : [],
      threadCreated: false,
    };
  }

  /** A new thread on one of the caller's email accounts, with the address as its (orphan, if new) partner. */
  private async newThread(tx: EntityManager, caller: Principal, input: SendEmailInput): Promise<Route> {
    if (input.subject === undefined) throw new ValidationError('subject is required when starting a new thread with to', 'subject');
    const line = sendingLine(caller, {
      type: 'EMAIL_ACCOUNT',
      noun: 'email account',
      listTool: 'list_email_accounts',
      idField: 'fromAccountId',
      id: input.fromAccountId,
    });
    const to = normalizeAddress(input.to!);
    const threadId = await this.emailMessages.startThread(tx, caller, line.id, to, input.subject);
    return {
      orgId: caller.orgId,
      threadId,
      lineId: line.id,
      from: line.address,
      to,
      subject: input.subject,
      inReplyTo: null,
      references: [],
      threadCreated: true,
    };
  }
}
