import { ChannelAccessMode, LineRef, OrgTier } from './account.types';
import { KeyPermission } from './key-permissions';
import { UserRole } from './roles';

/**
 * Who is acting, resolved afresh on every request, whatever the way in: a person signed in to the
 * web app (a session), or an API key or OAuth grant acting for its person. Every surface (tool,
 * REST route, page, MCP method) reads this one type, and the services that hold the rules take it.
 * `keyId` tells the ways in apart where it matters (rate limits and revocation are per key): null
 * for a person's session, the key's or grant's id otherwise (isGrantId tells those two apart).
 * The admin token acts for no person: it has no principal (identity/api-key-management.ts).
 */
export type Principal = Person | KeyPrincipal;

/** What every principal carries: its person, with their org and live role, and what it may reach now. */
interface PrincipalBase {
  userId: string;
  orgId: string;
  orgTier: OrgTier;
  role: UserRole;
  /** For a key or grant: its allowlist's lines (LINES), or all its person's lines (ALL). */
  channelAccess: ChannelAccessMode;
  /** The lines it may use now: live memberships on lines not deleted, narrowed by a key's or grant's allowlist. */
  lines: LineRef[];
  /**
   * What it may do beside its lines (identity/key-permissions.ts), read live like its role: the
   * MCP endpoint lists and runs only the tools whose permission is here. A person has all.
   */
  permissions: KeyPermission[];
}

/**
 * A person signed in to the web app, resolved from the session cookie on every page request
 * (docs/web.md): all their live lines and every permission (a person is bound by their role only).
 * Page controllers take it with `@CurrentPrincipal()` on a `@SessionAuth()` route.
 */
export interface Person extends PrincipalBase {
  /** A session has no API key: the key's rate limit and revocation checks belong to keys and grants. */
  keyId: null;
  sessionId: string;
  email: string;
  displayName: string;
  channelAccess: 'ALL';
  /** The session's CSRF token: every form a page renders carries it in `_csrf` (web/components/csrf-field.tsx). */
  csrfToken: string;
}

/**
 * An API key or an OAuth grant (the person connected an app) acting for its
 * person, with the access chosen for it. Its id is `keyId`: a grant's is a UUID of version 8, a
 * key's version 4, so rate limits and download links keyed by it never mix the two.
 */
export interface KeyPrincipal extends PrincipalBase {
  keyId: string;
}

export interface AuthenticatedRequest {
  /** Who is acting: set by the AuthGuard for an API-key route (a key or grant) and for a @SessionAuth() page (a person). */
  principal?: Principal;
}

/**
 * What acting for a person needs (key management, mailboxes, OAuth consent take it). Statements
 * that act for a person read the person's role and org afresh from `users` (a session's role may
 * be older than a demotion); `role` here is for the page to decide what to show.
 */
export type PrincipalRef = Pick<Principal, 'userId' | 'orgId' | 'role'>;

/**
 * How a message names what the principal acts through: "this API key", "this app" (an OAuth grant:
 * the person connected an app, they never saw a key) or "you" (a person's own web session).
 */
export function actingThrough(principal: Pick<Principal, 'keyId'>): 'this API key' | 'this app' | 'you' {
  if (principal.keyId === null) return 'you';
  return isGrantId(principal.keyId) ? 'this app' : 'this API key';
}

/** A grant's id (UUID version 8), as opposed to an API key's (version 4). */
export function isGrantId(id: string): boolean {
  return id.length === 36 && id[14] === '8';
}
