import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { queryNamed } from '../../database/sql';
import { NotCountedReason } from './open-policy';

/** A tracked email, locked by a pixel fetch; `at` is the fetch's time, from the database clock. */
export interface TrackedEmailRow {
  id: string;
  org_id: string;
  line_id: string;
  sent_at: Date | null;
  last_opened_at: Date | null;
  at: Date;
}

/** A message's open counters after an open. */
export interface OpenCountersRow {
  first_opened_at: Date;
  last_opened_at: Date;
  open_count: number;
}

/**
 * SQL of open tracking (email_opens and the open counters of messages). Every method acts for
 * the pixel route, which knows nothing of a caller: it holds a tracking token, then the id of
 * the message that token found. All run in the transaction that holds the message row.
 */
@Injectable()
export class EmailOpensRepository {
  /** The outbound email sent with readReceipt that has this tracking token, its row locked for update. */
  async lockByToken(manager: EntityManager, token: string): Promise<TrackedEmailRow | undefined> {
    const [message] = await queryNamed<TrackedEmailRow[]>(
      manager,
      `SELECT id, org_id, line_id, sent_at, last_opened_at, clock_timestamp() AS at
             FROM messages WHERE tracking_token = :token AND read_receipt AND direction = 'OUTBOUND' AND channel = 'EMAIL'
              FOR UPDATE`,
      { token },
    );
    return message;
  }

  /** Records a distinct open (its own email_opens row) and moves the message's counters; answers them. */
  async recordOpen(manager: EntityManager, messageId: string, at: Date, userAgent: string | null): Promise<OpenCountersRow> {
    await queryNamed(
      manager,
      `INSERT INTO email_opens (message_id, opened_at, last_fetched_at, user_agent, counted) VALUES (:messageId, :at, :at, :userAgent, true)`,
      { messageId, at, userAgent },
    );
    // An UPDATE answers [rows, affected count].
    const [[open]] = await queryNamed<[OpenCountersRow[], number]>(
      manager,
      `UPDATE messages SET open_count = open_count + 1, first_opened_at = COALESCE(first_opened_at, :at), last_opened_at = :at
          WHERE id = :messageId RETURNING first_opened_at, last_opened_at, open_count`,
      { messageId, at },
    );
    return open;
  }

  /** Counts a refetch on the row of the message's latest counted open; false when it has none. */
  async countRefetch(manager: EntityManager, messageId: string, at: Date): Promise<boolean> {
    const [, repeated] = await queryNamed<[unknown, number]>(
      manager,
      `UPDATE email_opens SET fetch_count = fetch_count + 1, last_fetched_at = :at
          WHERE id = (SELECT id FROM email_opens WHERE message_id = :messageId AND counted ORDER BY opened_at DESC, id DESC LIMIT 1)`,
      { messageId, at },
    );
    return repeated === 1;
  }

  /** Counts a fetch that is not an open on the message's one row for that reason (created on the first). */
  async countNotOpen(manager: EntityManager, messageId: string, at: Date, userAgent: string | null, reason: NotCountedReason): Promise<void> {
    await queryNamed(
      manager,
      `INSERT INTO email_opens (message_id, opened_at, last_fetched_at, user_agent, counted, reason) VALUES (:messageId, :at, :at, :userAgent, false, :reason)
       ON CONFLICT (message_id, reason) WHERE NOT counted
       DO UPDATE SET fetch_count = email_opens.fetch_count + 1, last_fetched_at = EXCLUDED.last_fetched_at`,
      { messageId, at, userAgent, reason },
    );
  }
}
