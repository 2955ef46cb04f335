import { Inject, Injectable } from '@nestjs/common';
import { AccountsService } from '../../accounts/accounts.service';
import { Person } from '../../identity/principal';
import { ALL_KEY_PERMISSIONS } from '../../identity/key-permissions';
import { Clock } from '../../common/clock';
import { AppConfig } from '../../config/app-config';
import { APP_CONFIG } from '../../config/config.module';
import { SessionCookie } from './session-cookie';
import { LINK_TOKEN_PATTERN, newCsrfToken, newLinkToken, newSessionToken, SESSION_TOKEN_PATTERN, tokenHash } from './tokens';
import { SessionRow, WebSessionsRepository } from './web-sessions.repository';
import { LinesRepository } from '../../identity/lines.repository';

/** A sign-in link lives this long. */
export const LINK_LIFETIME_MS = 15 * 60_000;
/** last_seen_at is written at most this often per session. */
const TOUCH_EVERY_MS = 60_000;

/** Why a sign-in link cannot be used: never issued (or altered), already used, or past its 15 minutes. */
export type LinkProblem = 'invalid' | 'used' | 'expired';

export interface SessionView {
  id: string;
  createdAt: Date;
  lastSeenAt: Date;
  expiresAt: Date;
  revokedAt: Date | null;
  /** Whether the session can still be used now (not revoked, not past either timeout). */
  active: boolean;
  userAgent: string | null;
  ip: string | null;
}

/** Where the browser signs in from, recorded with the session. */
export interface SignInClient {
  userAgent: string | null;
  ip: string | null;
}

/**
 * The rules of sign-in links and web sessions (docs/web.md): a link is good once, for 15 minutes;
 * a session ends when it is revoked (sign-out, admin), after SESSION_IDLE_TIMEOUT_MINUTES unused,
 * or SESSION_ABSOLUTE_TIMEOUT_HOURS after sign-in, whichever comes first.
 */
@Injectable()
export class WebSessionsService {
  readonly cookie: SessionCookie;
  private readonly idleMs: number;
  private readonly absoluteMs: number;

  constructor(
    private readonly repository: WebSessionsRepository,
    private readonly accounts: AccountsService,
    private readonly lines: LinesRepository,
    private readonly clock: Clock,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.cookie = new SessionCookie(config.publicBaseUrl);
    this.idleMs = config.web.sessionIdleTimeoutMinutes * 60_000;
    this.absoluteMs = config.web.sessionAbsoluteTimeoutHours * 3_600_000;
  }

  /** A new one-time link for the user (404 naming userId for an unknown user). */
  async createLink(userId: string): Promise<{ url: string; expiresAt: Date }> {
    await this.accounts.getUser(userId);
    return this.issueLink(userId);
  }

  /** The user with this (normalised) email address, if any. */
  userIdByEmail(email: string): Promise<string | null> {
    return this.repository.userIdByEmail(email);
  }

  async issueLink(userId: string): Promise<{ url: string; expiresAt: Date }> {
    const token = newLinkToken();
    const now = this.clock.now();
    const expiresAt = new Date(now.getTime() + LINK_LIFETIME_MS);
    await this.repository.createLink(userId, tokenHash(token), now, expiresAt);
    return { url: `${this.config.publicBaseUrl}/sign-in/link?token=${encodeURIComponent(token)}`, expiresAt };
  }

  /** What is wrong with a link's token, or null when it can be used now. Reads only. */
  async linkProblem(token: string): Promise<LinkProblem | null> {
    if (!LINK_TOKEN_PATTERN.test(token)) return 'invalid';
    const state = await this.repository.linkState(tokenHash(token));
    if (!state) return 'invalid';
    if (state.used_at !== null) return 'used';
    if (state.expires_at.getTime() <= this.clock.now().getTime()) return 'expired';
    return null;
  }

  /**
   * Uses the link once (atomically: of concurrent requests one wins) and opens a new session with
   * a new token; the session the browser held before, if any, is revoked.
   */
  async signIn(
    linkToken: string,
    client: SignInClient,
    previousSessionToken: string | null,
  ): Promise<{ sessionToken: string; maxAgeSeconds: number } | { problem: LinkProblem }> {
    if (!LINK_TOKEN_PATTERN.test(linkToken)) return { problem: 'invalid' };
    const now = this.clock.now();
    const sessionToken = newSessionToken();
    const opened = await this.repository.consumeLink(
      tokenHash(linkToken),
      now,
      {
        tokenHash: tokenHash(sessionToken),
        csrfToken: newCsrfToken(),
        expiresAt: new Date(now.getTime() + this.absoluteMs),
        userAgent: client.userAgent?.slice(0, 512) ?? null,
        ip: client.ip ?? null,
      },
      previousSessionToken !== null && SESSION_TOKEN_PATTERN.test(previousSessionToken) ? tokenHash(previousSessionToken) : null,
    );
    if (!opened) return { problem: (await this.linkProblem(linkToken)) ?? 'used' };
    return { sessionToken, maxAgeSeconds: Math.floor(this.absoluteMs / 1000) };
  }

  /** The person of a live session, resolved afresh (role and lines as they are now); null when the session is not live. */
  async person(sessionToken: string): Promise<Person | null> {
    if (!SESSION_TOKEN_PATTERN.test(sessionToken)) return null;
    const now = this.clock.now();
    const row = await this.repository.livePerson(tokenHash(sessionToken), now, new Date(now.getTime() - this.idleMs));
    if (!row) return null;
    const [lines] = await Promise.all([
      this.lines.liveLinesOf(row.user_id),
      now.getTime() - row.last_seen_at.getTime() >= TOUCH_EVERY_MS
        ? this.repository.touch(row.session_id, now, new Date(now.getTime() - TOUCH_EVERY_MS))
        : undefined,
    ]);
    return {
      keyId: null,
      sessionId: row.session_id,
      userId: row.user_id,
      email: row.email,
      displayName: row.display_name,
      orgId: row.org_id,
      orgTier: row.tier,
      role: row.role,
      channelAccess: 'ALL',
      lines: lines.map(({ id, type, address }) => ({ id, type, address })),
      permissions: ALL_KEY_PERMISSIONS,
      csrfToken: row.csrf_token,
    };
  }

  /** Of the sessions `ids`, those still live now (held-open pages check their session again with it: live updates). */
  async liveSessionIds(ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const now = this.clock.now();
    return new Set(await this.repository.liveIds(ids, now, new Date(now.getTime() - this.idleMs)));
  }

  async signOut(sessionId: string): Promise<void> {
    await this.repository.revoke(sessionId, this.clock.now());
  }

  /** Ends every session of the user at once (404 naming userId for an unknown user). */
  async revokeAll(userId: string): Promise<number> {
    await this.accounts.getUser(userId);
    return this.repository.revokeAllOfUser(userId, this.clock.now());
  }

  async list(userId: string): Promise<SessionView[]> {
    await this.accounts.getUser(userId);
    const now = this.clock.now().getTime();
    return (await this.repository.listOfUser(userId)).map((row: SessionRow) => ({
      id: row.id,
      createdAt: row.created_at,
      lastSeenAt: row.last_seen_at,
      expiresAt: row.expires_at,
      revokedAt: row.revoked_at,
      active: row.revoked_at === null && row.expires_at.getTime() > now && row.last_seen_at.getTime() > now - this.idleMs,
      userAgent: row.user_agent,
      ip: row.ip,
    }));
  }
}
