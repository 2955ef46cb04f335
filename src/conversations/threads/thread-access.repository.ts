import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { Principal } from '../../identity/principal';
import { callerLines } from '../../identity/line-access.sql';
import { NotFoundError } from '../../common/errors';
import { queryNamed } from '../../database/sql';
import { Channel } from '../conversation-vocabulary';

/** A thread the caller may use, with what replying on it needs. */
export interface CallerThread {
  id: string;
  channel: Channel;
  line_id: string;
  line_address: string;
  partner_identity_id: string;
  subject: string | null;
}

/**
 * A thread the caller names by id, for every tool that reads or acts on one thread (threads,
 * outbound SMS and email, agent turns, a search in one thread): it is the caller's if it is of
 * the caller's org and on a line the caller may see (callerLines, auth/line-access.sql.ts, the
 * rule every read of a person's data applies). Anything else reads as not found, exactly as an
 * id that never existed.
 */
@Injectable()
export class ThreadAccessRepository {
  async threadForCaller(manager: EntityManager, caller: Principal, threadId: string): Promise<CallerThread> {
    const scope = callerLines(caller, 't.line_id', 't.org_id');
    const [thread] = await queryNamed<CallerThread[]>(
      manager,
      `SELECT t.id, t.channel, t.line_id, l.address AS line_address, t.partner_identity_id, t.subject
         FROM threads t JOIN lines l ON l.id = t.line_id
        WHERE t.id = :threadId AND ${scope.sql}`,
      { threadId, ...scope.parameters },
    );
    if (!thread) throw NotFoundError.of('thread', threadId, 'threadId');
    return thread;
  }
}
