import { Check, Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Org } from '../../accounts/org.entity';
import { Message } from '../message.entity';

/** An org's idempotency key of a send tool, live for 24 hours: the first call's arguments (digest) and the message it queued. */
@Entity({ name: 'send_idempotency_keys' })
@Index('send_idempotency_keys_created_idx', ['createdAt'])
@Check('send_idempotency_keys_key_check', 'length(key) >= 1 AND length(key) <= 255')
export class SendIdempotencyKey {
  @PrimaryColumn({ name: 'org_id', type: 'uuid', primaryKeyConstraintName: 'send_idempotency_keys_pkey' })
  orgId: string;

  @ManyToOne(() => Org, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'org_id', foreignKeyConstraintName: 'send_idempotency_keys_org_id_fkey' })
  org?: Org;

  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'send_idempotency_keys_pkey' })
  key: string;

  @Column({ type: 'text' })
  tool: string;

  @Column({ name: 'request_digest', type: 'text' })
  requestDigest: string;

  @Column({ name: 'message_id', type: 'uuid', nullable: true })
  messageId: string | null;

  @ManyToOne(() => Message, { onDelete: 'SET NULL' })
  @JoinColumn({ name: 'message_id', foreignKeyConstraintName: 'send_idempotency_keys_message_id_fkey' })
  message?: Message;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;
}
