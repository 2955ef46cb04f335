import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AgentTurnView } from '../../agents/agent.types';
import { AgentsService } from '../../agents/agents.service';
import { AttachmentsService } from '../../attachments/attachments.service';
import { Principal as Caller } from '../../identity/principal';
import { DomainError } from '../../common/errors';
import { RESULT_BOUNDS } from '../../common/result-bounds';
import { ContactsService, ContactView } from '../../conversations/contacts/contacts.service';
import { ThreadDetail, ThreadsService } from '../../conversations/threads/threads.service';
import { AttachmentBlock, MessageExtras } from './thread-messages';

/** Characters of a message body the thread page shows (the rest: "The message is longer"). */
const PAGE_BODY_CHARS = RESULT_BOUNDS.messageChars;
/** Characters of an attachment's extracted text the thread page shows. */
const PAGE_ATTACHMENT_CHARS = 5_000;

/** Everything the thread page shows of a thread, as of one moment. */
export interface ThreadView {
  /** get_thread's answer: the thread, its partner, labels and a page of messages. */
  detail: ThreadDetail;
  /** Of each email and each message with attachments: its subject and its attachments, read as read_attachment reads them. */
  extras: Map<string, MessageExtras>;
  /** The partner's contact (get_contact), when they are one. */
  contact: ContactView | null;
  /** The thread's drafts awaiting a human (list_agent_turns), newest first. */
  drafts: AgentTurnView[];
}

/**
 * The thread page's view (docs/web.md, "Conversations"): what get_thread, get_message,
 * read_attachment, get_contact and list_agent_turns answer for it, each by the service that tool
 * calls, all read in one REPEATABLE READ transaction. So the page shows one snapshot (a message and
 * its attachments as they were together), and its statements do not grow with its messages or
 * attachments: each step reads every message's or attachment's part at once. The thread is
 * checked once, as get_thread checks it: one on a line the person may not see reads as not found,
 * as one that never existed; the other reads keep to what that check answered.
 */
@Injectable()
export class ThreadViewService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly threads: ThreadsService,
    private readonly attachments: AttachmentsService,
    private readonly contacts: ContactsService,
    private readonly agents: AgentsService,
  ) {}

  view(caller: Caller, threadId: string, page: { cursor?: string }): Promise<ThreadView> {
    return this.dataSource.transaction('REPEATABLE READ', async (tx) => {
      const detail = await this.threads.read(tx, caller, threadId, { cursor: page.cursor, maxBodyChars: PAGE_BODY_CHARS });
      const heads = await this.threads.messageHeads(
        tx,
        detail.messages.filter((m) => m.channel === 'EMAIL' || m.attachmentCount > 0),
      );
      const listed = [...heads.values()].flatMap((head) => head.attachments);
      const reads = await this.attachments.readEach(
        caller,
        listed.map((a) => a.id),
        { maxChars: PAGE_ATTACHMENT_CHARS },
        tx,
      );
      const readOf = new Map(listed.map((a, i) => [a.id, reads[i]]));
      const extras = new Map<string, MessageExtras>();
      for (const [messageId, head] of heads) {
        const attachments = head.attachments.map((a): AttachmentBlock => {
          const read = readOf.get(a.id)!;
          return read instanceof DomainError ? { ...a, problem: read.message } : { ...a, read };
        });
        extras.set(messageId, { subject: head.subject, attachments, attachmentCount: head.attachmentCount });
      }
      const contact = detail.person?.id ? (await this.contacts.get(caller, detail.person.id, tx)).contact : null;
      const drafts = await this.agents.list(caller, { threadId: detail.thread.id, status: 'AWAITING_APPROVAL' }, tx);
      return { detail, extras, contact, drafts: drafts.turns };
    });
  }
}
