import { INestApplicationContext } from '@nestjs/common';
import { AgentsService } from '../agents/agents.service';
import { Principal } from '../identity/principal';
import { EmailIngestService } from '../channels/email/email-ingest.service';
import { ContactsService } from '../conversations/contacts/contacts.service';
import { ConversationsService } from '../conversations/conversations.service';
import { ThreadsService } from '../conversations/threads/threads.service';

/** The demo lines the conversations arrive on (DEMO in seed.ts). */
export interface DemoLines {
  phone: { id: string; address: string };
  email: { address: string };
}

/** What the seed wrote, for its summary. */
export interface DemoConversations {
  threads: number;
  drafts: number;
}

/** A meeting invitation, as a calendar attaches it to an email (RFC 5545): the thread page shows it. */
const INVITE = [
  'BEGIN:VCALENDAR',
  'VERSION:2.0',
  'PRODID:-//Demo Partner//Calendar//EN',
  'METHOD:REQUEST',
  'BEGIN:VEVENT',
  'UID:demo-quarterly-review@partner.example',
  'DTSTAMP:20261120T090000Z',
  'DTSTART:20261203T150000Z',
  'DTEND:20261203T160000Z',
  'SUMMARY:Quarterly review',
  'STATUS:CONFIRMED',
  'ORGANIZER;CN=Maria Lopez:mailto:maria@partner.example',
  'ATTENDEE;PARTSTAT=NEEDS-ACTION;RSVP=TRUE:mailto:inbox@demo.example',
  'END:VEVENT',
  'END:VCALENDAR',
  '',
].join('\r\n');

function inviteEmail(to: string): Buffer {
  const boundary = 'demo-seed-boundary';
  return Buffer.from(
    [
      'From: Maria Lopez <maria@partner.example>',
      `To: <${to}>`,
      'Subject: Quarterly review',
      'Date: Fri, 20 Nov 2026 09:12:00 +0000',
      'Message-ID: <demo-quarterly-review@partner.example>',
      'MIME-Version: 1.0',
      `Content-Type: multipart/mixed; boundary="${boundary}"`,
      '',
      `--${boundary}`,
      'Content-Type: text/plain; charset=UTF-8',
      '',
      'Hello, shall we go through the quarter on December 3rd? The invitation is attached.',
      '',
      'Maria',
      `--${boundary}`,
      'Content-Type: text/calendar; method=REQUEST; charset=UTF-8; name="invite.ics"',
      'Content-Disposition: attachment; filename="invite.ics"',
      '',
      INVITE,
      `--${boundary}--`,
      '',
    ].join('\r\n'),
  );
}

/**
 * A few conversations for the demo org, so a newcomer who signs in sees the inbox at work: two SMS
 * threads (one with a label, one whose partner is a contact with notes and a reply an agent in
 * DRAFT mode wrote and a person must approve) and an email with a calendar invitation. Written
 * through the services the ingest routes and tools use (the same rules, events and extraction), as
 * `owner` (a caller over every line of theirs).
 */
export async function seedConversations(app: INestApplicationContext, owner: Principal, lines: DemoLines): Promise<DemoConversations> {
  const conversations = app.get(ConversationsService);
  const sms = (from: string, body: string, id: string) =>
    conversations.recordInbound({
      to: lines.phone.address,
      channel: 'SMS',
      from: { kind: 'PHONE', value: from },
      body,
      providerMessageId: `demo-seed-${id}`,
      attachments: [],
    });

  const booking = await sms('+15557650101', 'Hi! Is the table for two still free at 8 tonight?', 'booking');
  await app
    .get(ContactsService)
    .create(owner, { displayName: 'Ada Lovelace', identities: [{ kind: 'PHONE', value: '+15557650101' }] })
    .then(({ contact }) => app.get(ContactsService).update(owner, { contactId: contact.id, notes: 'Prefers the window table.' }));
  const delivery = await sms('+15557650102', 'Do you deliver on Sundays?', 'delivery');
  await app.get(ThreadsService).label(owner, delivery.threadId, { add: [{ name: 'delivery' }] });
  await app.get(EmailIngestService).receive(inviteEmail(lines.email.address));

  const agents = app.get(AgentsService);
  const agent = await agents.createAgent(lines.phone.id, { name: 'Front desk', mode: 'DRAFT' });
  await agents.createTurn(owner, agent.id, { threadId: booking.threadId, body: 'Yes, a table for two at 8 is free tonight. Shall I reserve it for you?' });
  return { threads: 3, drafts: 1 };
}
