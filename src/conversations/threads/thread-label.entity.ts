import { Check, Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Label } from './label.entity';
import { Thread } from './thread.entity';

/** A label put on a thread, with how confident whoever put it was. */
@Entity({ name: 'thread_labels' })
@Index('thread_labels_label_idx', ['labelId', 'threadId'])
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

  /** From 0 to 1. */
  @Column({ type: 'real', default: 1 })
  confidence: number;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
