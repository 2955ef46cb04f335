import { Check, Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { Org } from '../accounts/org.entity';
import { User } from '../accounts/user.entity';
import { Message } from '../conversations/message.entity';
import { Thread } from '../conversations/threads/thread.entity';
import { Agent } from './agent.entity';
import { TurnStatus } from './agent.types';

/**
 * A reply an agent wrote on a thread: sent at once, or waiting for a human's decision (DRAFT
 * agents). Or a draft-only credential's send (issue 45): no agent, the credential that proposed it
 * and the whole message as it would be queued (`proposal`), waiting for a human likewise.
 */
@Entity({ name: 'agent_turns' })
// Created as (thread_id, created_at DESC) and (org_id, created_at DESC, id DESC): @Index has no column direction (see test/database/schema.e2e-spec.ts).
@Index('agent_turns_thread_idx', ['threadId', 'createdAt'])
@Index('agent_turns_org_recent_idx', ['orgId', 'createdAt', 'id'])
// Both created as (agent_id, created_at DESC, id DESC): @Index has no column direction.
@Index('agent_turns_agent_recent_idx', ['agentId', 'createdAt', 'id'])
@Index('agent_turns_awaiting_idx', ['agentId', 'createdAt', 'id'], { where: "status = 'AWAITING_APPROVAL'" })
// Created as (line_id, created_at DESC, id DESC) WHERE agent_id IS NULL: a line's credential drafts.
@Index('agent_turns_credential_recent_idx', ['lineId', 'createdAt', 'id'], { where: 'agent_id IS NULL' })
@Check('agent_turns_status_check', "status IN ('AWAITING_APPROVAL', 'SENT', 'REJECTED')")
@Check('agent_turns_credential_kind_check', "credential_kind IN ('API_KEY', 'OAUTH_GRANT')")
@Check('agent_turns_rejection_reason_check', 'char_length(rejection_reason) <= 1000')
@Check(
  'agent_turns_author_check',
  `(agent_id IS NOT NULL AND credential_id IS NULL AND proposal IS NULL AND line_id IS NULL)
          OR (agent_id IS NULL AND credential_id IS NOT NULL AND credential_name IS NOT NULL AND credential_kind IS NOT NULL
              AND proposal IS NOT NULL AND line_id IS NOT NULL)`,
)
export class AgentTurn {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'org_id', type: 'uuid' })
  orgId: string;

  @ManyToOne(() => Org, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'org_id', foreignKeyConstraintName: 'agent_turns_org_id_fkey' })
  org?: Org;

  /** The agent that took the turn; null for a draft-only credential's draft. */
  @Column({ name: 'agent_id', type: 'uuid', nullable: true })
  agentId: string | null;

  @ManyToOne(() => Agent, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'agent_id', foreignKeyConstraintName: 'agent_turns_agent_id_fkey' })
  agent?: Agent;

  @Column({ name: 'thread_id', type: 'uuid' })
  threadId: string;

  @ManyToOne(() => Thread, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'thread_id', foreignKeyConstraintName: 'agent_turns_thread_id_fkey' })
  thread?: Thread;

  @Column({ type: 'text' })
  status: TurnStatus;

  @Column({ type: 'text' })
  body: string;

  /** The message the reply was sent as (null unless SENT). */
  @Column({ name: 'message_id', type: 'uuid', nullable: true })
  messageId: string | null;

  @ManyToOne(() => Message, { onDelete: 'SET NULL' })
  @JoinColumn({ name: 'message_id', foreignKeyConstraintName: 'agent_turns_message_id_fkey' })
  message?: Message | null;

  /** The user who approved or rejected a draft. */
  @Column({ name: 'decided_by', type: 'uuid', nullable: true })
  decidedBy: string | null;

  @ManyToOne(() => User, { onDelete: 'SET NULL' })
  @JoinColumn({ name: 'decided_by', foreignKeyConstraintName: 'agent_turns_decided_by_fkey' })
  decider?: User | null;

  @Column({ name: 'decided_at', type: 'timestamptz', nullable: true })
  decidedAt: Date | null;

  /** A credential's draft: the line it goes from (its thread's), which decides who sees it. Null for an agent's turn (the agent's line). */
  @Column({ name: 'line_id', type: 'uuid', nullable: true })
  lineId: string | null;

  /** A credential's draft: the API key or OAuth grant whose call proposed it (no foreign key: the record outlives the credential). */
  @Column({ name: 'credential_id', type: 'uuid', nullable: true })
  credentialId: string | null;

  /** The credential's name when it proposed the draft (an API key's name, an app's client name). */
  @Column({ name: 'credential_name', type: 'text', nullable: true })
  credentialName: string | null;

  @Column({ name: 'credential_kind', type: 'text', nullable: true })
  credentialKind: 'API_KEY' | 'OAUTH_GRANT' | null;

  /** A credential's draft: the outbound message as it would have been queued (QueuedMessage), sent as is when approved. */
  @Column({ type: 'jsonb', nullable: true })
  proposal: object | null;

  /** Why a person rejected the turn, if they said (at most 1000 characters). */
  @Column({ name: 'rejection_reason', type: 'text', nullable: true })
  rejectionReason: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;
}
