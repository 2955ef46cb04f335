import { Check, Column, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { Message } from '../../conversations/message.entity';
import { NotCountedReason } from './open-policy';

/**
 * Fetches of an email's tracking pixel. A counted open is one row, whose fetch_count and
 * last_fetched_at take the refetches of the same view; fetches that are not opens are counted on
 * one row per (message, reason). 'unrecorded': rows from before the reason was stored.
 */
@Entity({ name: 'email_opens' })
// Created as (message_id, opened_at DESC): @Index has no column direction (see test/database/schema.e2e-spec.ts).
@Index('email_opens_message_idx', ['messageId', 'openedAt'])
@Index('email_opens_uncounted_key', ['messageId', 'reason'], { unique: true, where: 'NOT counted' })
@Check('email_opens_fetch_count_check', 'fetch_count >= 1')
@Check('email_opens_reason_check', "reason IN ('not-sent', 'scanner-window', 'ignored-user-agent', 'same-view', 'unrecorded')")
@Check('email_opens_counted_reason_check', '(reason IS NULL) = counted')
export class EmailOpen {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'message_id', type: 'uuid' })
  messageId: string;

  @ManyToOne(() => Message, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'message_id', foreignKeyConstraintName: 'email_opens_message_id_fkey' })
  message?: Message;

  /** The first fetch of the row. */
  @Column({ name: 'opened_at', type: 'timestamptz', precision: 3 })
  openedAt: Date;

  @Column({ name: 'user_agent', type: 'text', nullable: true })
  userAgent: string | null;

  @Column({ type: 'boolean' })
  counted: boolean;

  @Column({ name: 'fetch_count', type: 'int', default: 1 })
  fetchCount: number;

  @Column({ name: 'last_fetched_at', type: 'timestamptz', precision: 3 })
  lastFetchedAt: Date;

  /** Why the fetches are not an open; null exactly when counted. */
  @Column({ type: 'text', nullable: true })
  reason: NotCountedReason | 'unrecorded' | null;
}
