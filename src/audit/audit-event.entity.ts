import { Check, Column, Entity, Index, PrimaryColumn } from 'typeorm';

/** Who made a call: an API key, an OAuth grant (a connected app), a person on a page, or the admin token. */
export type AuditActorKind = 'api_key' | 'oauth_grant' | 'person' | 'admin';
/** Which way in the call came: an MCP tool, a REST API-key route, a web page form, the admin API. */
export type AuditSurface = 'mcp' | 'rest' | 'web' | 'admin';
/** ok: it did what was asked; refused: the caller or its input was turned away (4xx, a tool error); failed: the service could not. */
export type AuditOutcome = 'ok' | 'refused' | 'failed';

export const AUDIT_ACTOR_KINDS: readonly AuditActorKind[] = ['api_key', 'oauth_grant', 'person', 'admin'];
export const AUDIT_SURFACES: readonly AuditSurface[] = ['mcp', 'rest', 'web', 'admin'];
export const AUDIT_OUTCOMES: readonly AuditOutcome[] = ['ok', 'refused', 'failed'];

/**
 * One changing call (docs/decisions.md, "The audit trail"): written in the transaction of the
 * change it records (AuditSubscriber), or after the call when nothing was committed. No foreign
 * keys: the record outlives the credential, the person and what it names.
 */
@Entity({ name: 'audit_events' })
@Index('audit_events_org_idx', ['orgId', 'at', 'id'])
@Index('audit_events_credential_idx', ['credentialId', 'at', 'id'])
@Index('audit_events_at_idx', ['at'])
@Check('audit_events_actor_kind_check', "actor_kind IN ('api_key', 'oauth_grant', 'person', 'admin')")
@Check('audit_events_surface_check', "surface IN ('mcp', 'rest', 'web', 'admin')")
@Check('audit_events_outcome_check', "outcome IN ('ok', 'refused', 'failed')")
export class AuditEvent {
  @PrimaryColumn({ type: 'uuid' })
  id: string;

  /** The org acted in; null only for an admin call that names no org. */
  @Column({ name: 'org_id', type: 'uuid', nullable: true })
  orgId: string | null;

  /** When the call was made, to the millisecond. */
  @Column({ type: 'timestamptz' })
  at: Date;

  @Column({ name: 'actor_kind', type: 'text' })
  actorKind: AuditActorKind;

  /** The API key or OAuth grant that made the call; null for a person on a page and the admin token. */
  @Column({ name: 'credential_id', type: 'uuid', nullable: true })
  credentialId: string | null;

  /** The person the call acted for; null for the admin token. */
  @Column({ name: 'user_id', type: 'uuid', nullable: true })
  userId: string | null;

  /** The tool (`send_sms`) or the route (`POST /v1/threads/:threadId/reply`). */
  @Column({ type: 'text' })
  action: string;

  @Column({ type: 'text' })
  surface: AuditSurface;

  /** The ids named in the arguments and the result, by what they are (`threadId`, `messageId`, ...). */
  @Column({ type: 'jsonb' })
  targets: Record<string, string | string[]>;

  @Column({ type: 'text' })
  outcome: AuditOutcome;

  /** The error's code when the outcome is not ok (SEND_REFUSED, NOT_FOUND, FORBIDDEN, INTERNAL...). */
  @Column({ name: 'error_code', type: 'text', nullable: true })
  errorCode: string | null;

  /** A short note (a refusal's rule, an HTTP status): never a secret nor a message's text. */
  @Column({ type: 'text', nullable: true })
  detail: string | null;
}
