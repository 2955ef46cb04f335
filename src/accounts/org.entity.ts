import { Check, Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';
import { OrgTier } from '../identity/account.types';

@Entity({ name: 'orgs' })
@Check('orgs_name_check', 'length(name) BETWEEN 1 AND 200')
@Check('orgs_tier_check', "tier IN ('STARTER', 'PRO', 'POWER')")
@Check('orgs_delivery_log_retention_days_check', 'delivery_log_retention_days BETWEEN 1 AND 3650')
export class Org {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ type: 'text' })
  name: string;

  @Column({ type: 'text' })
  tier: OrgTier;

  /** Days this org's delivery log is kept, when fewer than DELIVERY_LOG_RETENTION_DAYS (docs/delivery-log.md); null: the global setting. */
  @Column({ name: 'delivery_log_retention_days', type: 'int', nullable: true })
  deliveryLogRetentionDays: number | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
