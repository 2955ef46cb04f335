import { Column, CreateDateColumn, Entity, PrimaryColumn, PrimaryGeneratedColumn } from 'typeorm';

/** The administrator grant that overrides an org's tier cap on webhook endpoints per user. */
@Entity({ name: 'endpoint_cap_grants' })
export class EndpointCapGrant {
  @PrimaryColumn({ name: 'org_id', type: 'uuid' })
  orgId: string;

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
export class EndpointCapAudit {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'org_id', type: 'uuid' })
  orgId: string;

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
