import { Check, Column, CreateDateColumn, DeleteDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { LineType } from '../identity/account.types';
import { Org } from './org.entity';

/**
 * A connected line: an email account or a phone number of an org. Deleting a line marks it
 * deleted (its history stays); a deleted line gives nobody access and matches no scope.
 */
@Entity({ name: 'lines' })
// A live address belongs to one line; a deleted line's address may be connected again.
@Index('lines_live_address_key', ['address'], { unique: true, where: 'deleted_at IS NULL' })
@Index('lines_org_id_idx', ['orgId'])
@Check('lines_type_check', "type IN ('EMAIL_ACCOUNT', 'PHONE_NUMBER')")
@Check(
  'lines_check',
  "(type = 'PHONE_NUMBER' AND address ~ '^\\+[1-9][0-9]{1,14}$') OR (type = 'EMAIL_ACCOUNT' AND address = lower(address) AND address LIKE '%_@_%')",
)
export class Line {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'org_id', type: 'uuid' })
  orgId: string;

  @ManyToOne(() => Org, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'org_id', foreignKeyConstraintName: 'lines_org_id_fkey' })
  org?: Org;

  @Column({ type: 'text' })
  type: LineType;

  /** Lowercased email address, or an E.164 phone number. */
  @Column({ type: 'text' })
  address: string;

  /** PHONE_NUMBER lines: whether the carrier reports delivery later (QUEUED → SENT → DELIVERED) or not (QUEUED → DELIVERED). */
  @Column({ name: 'sms_delivery_reports', type: 'boolean', default: true })
  smsDeliveryReports: boolean;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @DeleteDateColumn({ name: 'deleted_at', type: 'timestamptz', nullable: true })
  deletedAt: Date | null;
}
