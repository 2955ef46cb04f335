import { Check, Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { Org } from '../accounts/org.entity';
import { User } from '../accounts/user.entity';
import { Message } from '../conversations/message.entity';
import { Thread } from '../conversations/threads/thread.entity';
import { Agent } from './agent.entity';
import { TurnStatus } from './agent.types';

/** A reply an agent wrote on a thread: sent at once, or waiting for a human's decision (DRAFT agents). */
@Entity({ name: 'agent_turns' })
// Created as (thread_id, created_at DESC) and (org_id, created_at DESC, id DESC): @Index has no column direction (see test/database/schema.e2e-spec.ts).
@Index('agent_turns_thread_idx', ['threadId', 'createdAt'])
@Index('agent_turns_org_recent_idx', ['orgId', 'createdAt', 'id'])
// Both created as (agent_id, created_at DESC, id DESC): @Index has no column direction.
@Index('agent_turns_agent_recent_idx', ['agentId', 'createdAt', 'id'])
@Index('agent_turns_awaiting_idx', ['agentId', 'createdAt', 'id'], { where: "status = 'AWAITING_APPROVAL'" })
@Check('agent_turns_status_check', "status IN ('AWAITING_APPROVAL', 'SENT', 'REJECTED')")
export class AgentTurn {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'org_id', type: 'uuid' })
  orgId: string;

  @ManyToOne(() => Org, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'org_id', foreignKeyConstraintName: 'agent_turns_org_id_fkey' })
  org?: Org;

  @Column({ name: 'agent_id', type: 'uuid' })
  agentId: string;

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

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;
}
