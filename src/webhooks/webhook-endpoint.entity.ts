import { Column, CreateDateColumn, Entity, OneToMany, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';
import { EndpointStatus, EventKind, PayloadMode } from './webhook.types';
import { WebhookEndpointChannel } from './webhook-endpoint-channel.entity';

@Entity({ name: 'webhook_endpoints' })
export class WebhookEndpoint {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'user_id', type: 'uuid' })
  userId: string;

  @Column({ name: 'org_id', type: 'uuid' })
  orgId: string;

  @Column({ type: 'text' })
  url: string;

  @Column({ type: 'text', array: true })
  events: EventKind[];

  @Column({ type: 'text' })
  mode: PayloadMode;

  @Column({ name: 'message_history_count', type: 'int' })
  messageHistoryCount: number;

  @Column({ type: 'text' })
  status: EndpointStatus;

  @Column({ name: 'all_channels', type: 'boolean' })
  allChannels: boolean;

  @OneToMany(() => WebhookEndpointChannel, (channel) => channel.endpoint, { cascade: true, eager: true })
  channels: WebhookEndpointChannel[];

  /** AES-GCM sealed signing secret (see SecretBox). */
  @Column({ name: 'secret_sealed', type: 'text', select: false })
  secretSealed: string;

  @Column({ name: 'previous_secret_sealed', type: 'text', nullable: true, select: false })
  previousSecretSealed: string | null;

  @Column({ name: 'previous_secret_expires_at', type: 'timestamptz', nullable: true })
  previousSecretExpiresAt: Date | null;

  /** Failed attempts in a row since the last success (auto-disable at 100). */
  @Column({ name: 'consecutive_failures', type: 'int', default: 0 })
  consecutiveFailures: number;

  /** When the current run of failures began (auto-disable after 24 h). */
  @Column({ name: 'failing_since', type: 'timestamptz', nullable: true })
  failingSince: Date | null;

  @Column({ name: 'disabled_reason', type: 'text', nullable: true })
  disabledReason: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
