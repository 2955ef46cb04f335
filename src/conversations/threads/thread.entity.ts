import { Check, Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { Line } from '../../accounts/line.entity';
import { Org } from '../../accounts/org.entity';
import { Channel } from '../conversation-vocabulary';
import { Identity } from '../contacts/identity.entity';

/** A conversation on one line with one partner identity: one thread per (line, partner) for SMS. */
@Entity({ name: 'threads' })
// Created as (line_id, last_message_at DESC, id DESC): @Index has no column direction (see test/database/schema.e2e-spec.ts).
@Index('threads_line_recent_idx', ['lineId', 'lastMessageAt', 'id'])
@Index('threads_partner_idx', ['partnerIdentityId', 'lineId'])
@Index('threads_sms_partner_key', ['lineId', 'partnerIdentityId'], { unique: true, where: "channel = 'SMS'" })
@Check('threads_channel_check', "channel IN ('SMS', 'EMAIL')")
@Check('threads_message_count_check', 'message_count >= 0')
export class Thread {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'org_id', type: 'uuid' })
  orgId: string;

  @ManyToOne(() => Org, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'org_id', foreignKeyConstraintName: 'threads_org_id_fkey' })
  org?: Org;

  @Column({ name: 'line_id', type: 'uuid' })
  lineId: string;

  @ManyToOne(() => Line, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'line_id', foreignKeyConstraintName: 'threads_line_id_fkey' })
  line?: Line;

  @Column({ type: 'text' })
  channel: Channel;

  @Column({ name: 'partner_identity_id', type: 'uuid' })
  partnerIdentityId: string;

  /** No ON DELETE: an identity is not deleted while a thread has it as partner. */
  @ManyToOne(() => Identity)
  @JoinColumn({ name: 'partner_identity_id', foreignKeyConstraintName: 'threads_partner_identity_id_fkey' })
  partnerIdentity?: Identity;

  @Column({ type: 'text', nullable: true })
  subject: string | null;

  @Column({ name: 'last_message_at', type: 'timestamptz', precision: 3 })
  lastMessageAt: Date;

  @Column({ name: 'message_count', type: 'int', default: 0 })
  messageCount: number;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;
}
