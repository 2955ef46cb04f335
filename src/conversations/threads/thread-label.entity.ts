import { Check, Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Label } from './label.entity';
import { Thread } from './thread.entity';

/**
 * A label put on a thread, with how confident whoever put it was, and copies of its thread's line
 * and last activity (kept by the database: migration ThreadLabelsByRecency) so a label's threads
 * are listed newest first from one index.
 */
@Entity({ name: 'thread_labels' })
// Created as (label_id, line_id, last_message_at DESC, thread_id DESC): @Index has no column direction.
@Index('thread_labels_label_recent_idx', ['labelId', 'lineId', 'lastMessageAt', 'threadId'])
@Check('thread_labels_confidence_check', 'confidence >= 0 AND confidence <= 1')
export class ThreadLabel {
  @PrimaryColumn({ name: 'thread_id', type: 'uuid' })
  threadId: string;

  @ManyToOne(() => Thread, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'thread_id', foreignKeyConstraintName: 'thread_labels_thread_id_fkey' })
  thread?: Thread;

  @PrimaryColumn({ name: 'label_id', type: 'uuid' })
  labelId: string;

  @ManyToOne(() => Label, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'label_id', foreignKeyConstraintName: 'thread_labels_label_id_fkey' })
  label?: Label;

  /** The thread's line, set on insert from the thread (a trigger; whatever the INSERT gives is replaced). */
  @Column({ name: 'line_id', type: 'uuid' })
  lineId: string;

  /** The thread's last_message_at, set on insert and kept equal by triggers. */
  @Column({ name: 'last_message_at', type: 'timestamptz', precision: 3 })
  lastMessageAt: Date;

  /** From 0 to 1. */
  @Column({ type: 'real', default: 1 })
  confidence: number;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
