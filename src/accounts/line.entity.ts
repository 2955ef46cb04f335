import { Column, CreateDateColumn, DeleteDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';
import { LineType } from './account.types';

/**
 * A connected line: an email account or a phone number of an org. Deleting a line marks it
 * deleted (its history stays); a deleted line gives nobody access and matches no scope.
 */
@Entity({ name: 'lines' })
export class Line {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'org_id', type: 'uuid' })
  orgId: string;

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
