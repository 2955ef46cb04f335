import { Check, Column, Entity, JoinColumn, ManyToOne, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import { Line } from '../../../accounts/line.entity';

/** The sync health of an email account line, as its mailbox sync last reported it. */
@Entity({ name: 'email_account_health' })
@Check('email_account_health_status_check', "status IN ('healthy', 'unhealthy')")
export class EmailAccountHealth {
  @PrimaryColumn({ name: 'line_id', type: 'uuid' })
  lineId: string;

  @ManyToOne(() => Line, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'line_id', foreignKeyConstraintName: 'email_account_health_line_id_fkey' })
  line?: Line;

  @Column({ type: 'text' })
  status: 'healthy' | 'unhealthy';

  @Column({ name: 'error_kind', type: 'text', nullable: true })
  errorKind: string | null;

  @Column({ type: 'text', nullable: true })
  error: string | null;

  /** When the current status began (null while it was never unhealthy). */
  @Column({ type: 'timestamptz', nullable: true })
  since: Date | null;

  /** The last successful sync. */
  @Column({ name: 'last_synced_at', type: 'timestamptz', nullable: true })
  lastSyncedAt: Date | null;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
