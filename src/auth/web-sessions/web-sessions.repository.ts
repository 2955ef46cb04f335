import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { OrgTier } from '../../identity/account.types';
import { UserRole } from '../../identity/roles';
import { deleteInBatches } from '../../database/delete-in-batches';
import { queryNamed } from '../../database/sql';

/** Used or expired links, and ended sessions, are kept this long (to answer "already used"), then deleted. */
export const KEEP_ENDED_MS = 30 * 24 * 3_600_000;
/** Rows per DELETE of the retention: each batch one short statement. */
const PRUNE_BATCH = 500;
const PRUNE_PAUSE_MS = 50;

/** What a sign-in link's token is, as far as its row tells. */
export interface LinkStateRow {
  used_at: Date | null;
  expires_at: Date;
}

/** A live session with its person (user and org). */
export interface SessionPersonRow {
  session_id: string;
  csrf_token: string;
  last_seen_at: Date;
  user_id: string;
  email: string;
  display_name: string;
  role: UserRole;
  org_id: string;
  tier: OrgTier;
}

/** A session as the admin API lists it (no token). */
export interface SessionRow {
  id: string;
  created_at: Date;
  last_seen_at: Date;
  expires_at: Date;
  revoked_at: Date | null;
  user_agent: string | null;
  ip: string | null;
}

export interface NewSession {
  tokenHash: string;
  csrfToken: string;
  expiresAt: Date;
  userAgent: string | null;
  ip: string | null;
}

/**
 * SQL of sign-in links and web sessions. Every time comes from the caller (the service's Clock),
 * never from the database's now(), so the rules can be tested with a moved clock.
 */
@Injectable()
export class WebSessionsRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * Deletes the links that expired before `before` and the sessions that ended before it (past
   * their absolute end, or revoked), in small batches; answers how many of each.
   */
  async deleteEndedBefore(before: Date): Promise<{ links: number; sessions: number }> {
    const options = { batchSize: PRUNE_BATCH, pauseMs: PRUNE_PAUSE_MS };
    const links = await deleteInBatches(
      this.dataSource,
      `DELETE FROM sign_in_links WHERE id IN (SELECT id FROM sign_in_links WHERE expires_at < $1 LIMIT $2)`,
      [before],
      options,
    );
    const sessions = await deleteInBatches(
      this.dataSource,
      `DELETE FROM web_sessions WHERE id IN (SELECT id FROM web_sessions WHERE expires_at < $1 OR revoked_at < $1 LIMIT $2)`,
      [before],
      options,
    );
    return { links: links.rows, sessions: sessions.rows };
  }

  /** Stores a new link; drops the user's links that ended long ago. */
  async createLink(userId: string, tokenHash: string, now: Date, expiresAt: Date): Promise<void> {
    await this.dataSource.transaction(async (manager) => {
      await queryNamed(manager, `DELETE FROM sign_in_links WHERE user_id = :userId AND expires_at < :before`, {
        userId,
        before: new Date(now.getTime() - KEEP_ENDED_MS),
      });
      await queryNamed(manager, `INSERT INTO sign_in_links (user_id, token_hash, created_at, expires_at) VALUES (:userId, :tokenHash, :now, :expiresAt)`, {
        userId,
        tokenHash,
        now,
        expiresAt,
      });
    });
  }

  async linkState(tokenHash: string): Promise<LinkStateRow | null> {
    const rows = await queryNamed<LinkStateRow[]>(this.dataSource.manager, `SELECT used_at, expires_at FROM sign_in_links WHERE token_hash = :tokenHash`, {
      tokenHash,
    });
    return rows[0] ?? null;
  }

  /**
   * Uses the link and opens a session for its user, in one transaction: the UPDATE takes the link
   * only while it is unused and unexpired, so of concurrent requests exactly one gets a row. The
   * session the browser held before (if any) is revoked. Null when the link cannot be used.
   */
  async consumeLink(
    linkHash: string,
    now: Date,
    session: NewSession,
    previousSessionHash: string | null,
  ): Promise<{ userId: string; sessionId: string } | null> {
    return this.dataSource.transaction(async (manager) => {
      // TypeORM answers an UPDATE with [rows, affected].
      const [used] = await queryNamed<[Array<{ user_id: string }>, number]>(
        manager,
        `UPDATE sign_in_links SET used_at = :now WHERE token_hash = :linkHash AND used_at IS NULL AND expires_at > :now RETURNING user_id`,
        { linkHash, now },
      );
      if (used.length === 0) return null;
      const userId = used[0].user_id;
      await queryNamed(manager, `DELETE FROM web_sessions WHERE user_id = :userId AND expires_at < :before`, {
        userId,
        before: new Date(now.getTime() - KEEP_ENDED_MS),
      });
      if (previousSessionHash !== null) {
        await queryNamed(manager, `UPDATE web_sessions SET revoked_at = :now WHERE token_hash = :previousSessionHash AND revoked_at IS NULL`, {
          now,
          previousSessionHash,
        });
      }
      const created = await queryNamed<Array<{ id: string }>>(
        manager,
        `INSERT INTO web_sessions (user_id, token_hash, csrf_token, created_at, last_seen_at, expires_at, user_agent, ip)
         VALUES (:userId, :tokenHash, :csrfToken, :now, :now, :expiresAt, :userAgent, :ip) RETURNING id`,
        { userId, now, ...session },
      );
      return { userId, sessionId: created[0].id };
    });
  }

  /** The session with this token while it is live at `now` (not revoked, not past its end, seen since `idleSince`), with its person. */
  async livePerson(tokenHash: string, now: Date, idleSince: Date): Promise<SessionPersonRow | null> {
    const rows = await queryNamed<SessionPersonRow[]>(
      this.dataSource.manager,
      `SELECT s.id AS session_id, s.csrf_token, s.last_seen_at, u.id AS user_id, u.email, u.display_name, u.role, o.id AS org_id, o.tier
         FROM web_sessions s
         JOIN users u ON u.id = s.user_id
         JOIN orgs o ON o.id = u.org_id
        WHERE s.token_hash = :tokenHash AND s.revoked_at IS NULL AND s.expires_at > :now AND s.last_seen_at > :idleSince`,
      { tokenHash, now, idleSince },
    );
    return rows[0] ?? null;
  }

  /** Of the sessions `ids`, those live at `now` (not revoked, not past their end, seen since `idleSince`). */
  async liveIds(ids: string[], now: Date, idleSince: Date): Promise<string[]> {
    const rows = await queryNamed<Array<{ id: string }>>(
      this.dataSource.manager,
      `SELECT id FROM web_sessions WHERE id = ANY (:ids::uuid[]) AND revoked_at IS NULL AND expires_at > :now AND last_seen_at > :idleSince`,
      { ids, now, idleSince },
    );
    return rows.map((r) => r.id);
  }

  /** Moves last_seen_at to `now` unless it is already after `unlessAfter` (one write a minute at most). */
  async touch(sessionId: string, now: Date, unlessAfter: Date): Promise<void> {
    await queryNamed(this.dataSource.manager, `UPDATE web_sessions SET last_seen_at = :now WHERE id = :sessionId AND last_seen_at <= :unlessAfter`, {
      sessionId,
      now,
      unlessAfter,
    });
  }

  async revoke(sessionId: string, now: Date): Promise<void> {
    await this.dataSource.transaction((manager) =>
      queryNamed(manager, `UPDATE web_sessions SET revoked_at = :now WHERE id = :sessionId AND revoked_at IS NULL`, { sessionId, now }),
    );
  }

  /** Revokes every session of the user that is not revoked yet; how many it revoked. */
  async revokeAllOfUser(userId: string, now: Date): Promise<number> {
    const [, affected] = await this.dataSource.transaction((manager) =>
      queryNamed<[unknown[], number]>(manager, `UPDATE web_sessions SET revoked_at = :now WHERE user_id = :userId AND revoked_at IS NULL`, { userId, now }),
    );
    return affected;
  }

  listOfUser(userId: string): Promise<SessionRow[]> {
    return queryNamed(
      this.dataSource.manager,
      `SELECT id, created_at, last_seen_at, expires_at, revoked_at, user_agent, ip FROM web_sessions WHERE user_id = :userId ORDER BY created_at DESC, id`,
      { userId },
    );
  }

  async userIdByEmail(email: string): Promise<string | null> {
    const rows = await queryNamed<Array<{ id: string }>>(this.dataSource.manager, `SELECT id FROM users WHERE email = :email`, { email });
    return rows[0]?.id ?? null;
  }
}
