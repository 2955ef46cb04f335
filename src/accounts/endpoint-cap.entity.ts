import { Check, Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn, PrimaryGeneratedColumn } from 'typeorm';
import { Org } from './org.entity';

/** The administrator grant that overrides an org's tier cap on webhook endpoints per user. */
@Entity({ name: 'endpoint_cap_grants' })
@Check('endpoint_cap_grants_max_endpoints_per_user_check', 'max_endpoints_per_user BETWEEN 0 AND 1000')
@Check('endpoint_cap_grants_reason_check', 'length(reason) > 0')
export class EndpointCapGrant {
  @PrimaryColumn({ name: 'org_id', type: 'uuid' })
  orgId: string;

  @ManyToOne(() => Org, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'org_id', foreignKeyConstraintName: 'endpoint_cap_grants_org_id_fkey' })
  org?: Org;

  @Column({ name: 'max_endpoints_per_user', type: 'int' })
  maxEndpointsPerUser: number;

  @Column({ type: 'text' })
  reason: string;

  @Column({ name: 'expires_at', type: 'timestamptz', nullable: true })
  expiresAt: Date | null;

  @CreateDateColumn({ name: 'granted_at', type: 'timestamptz' })
  grantedAt: Date;
}

/** Every change to a grant, kept for audit. */
@Entity({ name: 'endpoint_cap_audit' })
// Created as (org_id, created_at DESC): @Index has no column direction (see test/database/schema.e2e-spec.ts).
@Index('endpoint_cap_audit_org_idx', ['orgId', 'createdAt'])
@Check('endpoint_cap_audit_action_check', "action IN ('GRANTED', 'REMOVED')")
export class EndpointCapAudit {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'org_id', type: 'uuid' })
  orgId: string;

  @ManyToOne(() => Org, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'org_id', foreignKeyConstraintName: 'endpoint_cap_audit_org_id_fkey' })
  org?: Org;

  @Column({ type: 'text' })
  action: 'GRANTED' | 'REMOVED';

  @Column({ name: 'max_endpoints_per_user', type: 'int', nullable: true })
  maxEndpointsPerUser: number | null;

  @Column({ type: 'text' })
  reason: string;

  @Column({ name: 'expires_at', type: 'timestamptz', nullable: true })
  expiresAt: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
