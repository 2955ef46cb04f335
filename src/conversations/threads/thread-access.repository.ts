import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { Caller } from '../../auth/caller';
import { NotFoundError } from '../../common/errors';
import { queryNamed } from '../../database/sql';

/** A thread the caller may use, with what replying on it needs. */
export interface CallerThread {
  id: string;
  channel: 'SMS' | 'EMAIL';
  line_id: string;
  line_address: string;
  partner_identity_id: string;
  subject: string | null;
}

/**
 * The one thread-access check, used by every tool that reads or acts on a thread (threads,
 * outbound SMS and email, agent turns): a thread is the caller's if it is of the caller's org
 * and lies on a live line the caller may use now (the user's lines ∩ the key's allowlist).
 * Anything else reads as not found, exactly as an id that never existed.
 */
@Injectable()
export class ThreadAccessRepository {
  async threadForCaller(manager: EntityManager, caller: Caller, threadId: string): Promise<CallerThread> {
    const [thread] = await queryNamed<CallerThread[]>(
      manager,
      `SELECT t.id, t.channel, t.line_id, l.address AS line_address, t.partner_identity_id, t.subject
         FROM threads t JOIN lines l ON l.id = t.line_id AND l.deleted_at IS NULL
        WHERE t.id = :threadId AND t.org_id = :orgId AND t.line_id = ANY (:lineIds::uuid[])`,
      { threadId, orgId: caller.orgId, lineIds: caller.lines.map((l) => l.id) },
    );
    if (!thread) throw NotFoundError.of('thread', threadId, 'threadId');
    return thread;
  }
}
