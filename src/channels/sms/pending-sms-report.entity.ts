import { Check, Column, Entity, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Line } from '../../accounts/line.entity';

/** A delivery report that came before the hand-off stored the provider's message id; applied by the hand-off. */
@Entity({ name: 'pending_sms_reports' })
@Check('pending_sms_reports_provider_message_id_check', 'length(provider_message_id) >= 1 AND length(provider_message_id) <= 200')
@Check('pending_sms_reports_status_check', "status = ANY (ARRAY['DELIVERED'::text, 'FAILED'::text])")
export class PendingSmsReport {
  @PrimaryColumn({ name: 'line_id', type: 'uuid', primaryKeyConstraintName: 'pending_sms_reports_pkey' })
  lineId: string;

  @ManyToOne(() => Line, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'line_id', foreignKeyConstraintName: 'pending_sms_reports_line_id_fkey' })
  line?: Line;

  @PrimaryColumn({ name: 'provider_message_id', type: 'text', primaryKeyConstraintName: 'pending_sms_reports_pkey' })
  providerMessageId: string;

  @Column({ type: 'text' })
  status: 'DELIVERED' | 'FAILED';

  @Column({ type: 'text', nullable: true })
  error: string | null;

  @Column({ name: 'received_at', type: 'timestamptz', default: () => 'now()' })
  receivedAt: Date;
}
