import { Column, Entity, Index, JoinColumn, OneToOne, PrimaryColumn } from 'typeorm';
import { Message } from '../message.entity';

/**
 * A SCHEDULED message and its time, for the due sweep (OutboundRepository.dueScheduled): a row
 * while the message is SCHEDULED, kept by the trigger messages_keep_scheduled (migration
 * ScheduledMessages), so no index of messages names its status.
 */
@Entity({ name: 'scheduled_messages' })
@Index('scheduled_messages_due_idx', ['sendAt'])
export class ScheduledMessage {
  @PrimaryColumn({ name: 'message_id', type: 'uuid', primaryKeyConstraintName: 'scheduled_messages_pkey' })
  messageId: string;

  @OneToOne(() => Message, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'message_id', foreignKeyConstraintName: 'scheduled_messages_message_id_fkey' })
  message?: Message;

  @Column({ name: 'send_at', type: 'timestamptz', precision: 3 })
  sendAt: Date;
}
