import { Injectable } from '@nestjs/common';
import { NotFoundError } from '../../common/errors';
import { ConversationsService, InboundResult } from '../../conversations/conversations.service';
import { parseInboundEmail } from './inbound-email.parser';
import { LinesRepository } from '../../identity/lines.repository';

/** Inbound email: a raw message from the mail server becomes a message on one of our email lines. */
@Injectable()
export class EmailIngestService {
  constructor(
    private readonly lines: LinesRepository,
    private readonly conversations: ConversationsService,
  ) {}

  /**
   * Parses the message, picks the receiving line (the first To, Cc or Delivered-To address that is
   * one of our email accounts) and records it once per Message-ID.
   */
  async receive(raw: Buffer): Promise<InboundResult> {
    const email = await parseInboundEmail(raw);
    return this.record(email, await this.receivingLine(email.recipients));
  }

  /**
   * A message read from the mailbox of the email account `lineAddress` (docs/mailboxes.md): it is
   * that line's whatever its headers say (a Bcc, an alias, a list). Once per Message-ID, like
   * every inbound message, so a message synced again is not recorded twice.
   */
  async receiveFromMailbox(raw: Buffer, lineAddress: string): Promise<InboundResult> {
    return this.record(await parseInboundEmail(raw, { requireRecipient: false }), lineAddress);
  }

  private record(email: Awaited<ReturnType<typeof parseInboundEmail>>, line: string): Promise<InboundResult> {
    return this.conversations.recordInbound({
      to: line,
      channel: 'EMAIL',
      from: { kind: 'EMAIL', value: email.from.address, displayName: email.from.displayName },
      body: email.text,
      html: email.html,
      subject: email.subject,
      providerMessageId: email.providerMessageId,
      email: {
        messageId: email.messageId,
        inReplyTo: email.inReplyTo,
        references: email.references,
        listUnsubscribe: email.listUnsubscribe,
        ...email.authentication,
      },
      attachments: email.attachments.map((a) => ({ filename: a.filename, mimeType: a.contentType, content: a.content })),
    });
  }

  private async receivingLine(recipients: string[]): Promise<string> {
    const ours = new Set(await this.lines.liveAddresses(recipients, 'EMAIL_ACCOUNT'));
    const line = recipients.find((r) => ours.has(r));
    if (!line) throw new NotFoundError(`none of the recipients (${recipients.join(', ')}) is an email account line`, 'to');
    return line;
  }
}
