import { Check, Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, OneToMany, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';
import { Org } from '../accounts/org.entity';
import { User } from '../accounts/user.entity';
import { EndpointPurpose, EndpointStatus, EventKind, PayloadMode, SignatureVersion } from './webhook.types';
import { WebhookEndpointChannel } from './webhook-endpoint-channel.entity';

@Entity({ name: 'webhook_endpoints' })
@Index('webhook_endpoints_user_idx', ['userId', 'createdAt'])
@Index('webhook_endpoints_org_active_idx', ['orgId'], { where: "status = 'active'" })
@Check('webhook_endpoints_url_check', "length(url) <= 2048 AND url ~ '^https?://'")
// The event kinds of src/events/event-kinds.ts, as the migration wrote them down.
@Check(
  'webhook_endpoints_events_check',
  "cardinality(events) > 0 AND events <@ ARRAY['message.received', 'message.sent', 'message.status_changed', 'thread.created', 'email.opened', 'attachment.extracted', 'contact.merged', 'email_account.health_changed', 'agent_turn.awaiting_approval', 'agent_turn.sent', 'sms.opted_out', 'sms.opted_in', 'agent_turn.rejected']",
)
@Check('webhook_endpoints_mode_check', "mode IN ('concise', 'verbose')")
@Check('webhook_endpoints_message_history_count_check', 'message_history_count BETWEEN 0 AND 50')
@Check('webhook_endpoints_status_check', "status IN ('active', 'disabled')")
@Check('webhook_endpoints_consecutive_failures_check', 'consecutive_failures >= 0')
@Check('webhook_endpoints_check', '(previous_secret_sealed IS NULL) = (previous_secret_expires_at IS NULL)')
@Check('webhook_endpoints_purpose_check', "purpose IN ('webhook', 'event_subscription')")
@Check('webhook_endpoints_signature_version_check', "signature_version IN ('v1', 'v1a')")
@Check(
  'webhook_endpoints_signing_key_check',
  "(signing_key_sealed IS NULL) = (public_key IS NULL) AND (signing_key_sealed IS NOT NULL) = (signature_version = 'v1a')",
)
@Check(
  'webhook_endpoints_previous_signing_key_check',
  '(previous_signing_key_sealed IS NULL) = (previous_public_key IS NULL) AND (previous_signing_key_sealed IS NULL OR previous_secret_expires_at IS NOT NULL)',
)
export class WebhookEndpoint {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'user_id', type: 'uuid' })
  userId: string;

  @ManyToOne(() => User, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'user_id', foreignKeyConstraintName: 'webhook_endpoints_user_id_fkey' })
  user?: User;

  @Column({ name: 'org_id', type: 'uuid' })
  orgId: string;

  @ManyToOne(() => Org, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'org_id', foreignKeyConstraintName: 'webhook_endpoints_org_id_fkey' })
  org?: Org;

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

  /** The Standard Webhooks signature version of `webhook-signature`: v1 (HMAC with the secret) or v1a (ed25519). */
  @Column({ name: 'signature_version', type: 'text', default: 'v1' })
  signatureVersion: SignatureVersion;

  /** Whether deliveries still carry the legacy X-Service-Signature header. */
  @Column({ name: 'legacy_signature', type: 'boolean', default: true })
  legacySignature: boolean;

  /** v1a only: the ed25519 private key (PKCS#8 DER, base64), sealed with SecretBox. */
  @Column({ name: 'signing_key_sealed', type: 'text', nullable: true, select: false })
  signingKeySealed: string | null;

  /** v1a only: the public key, `whpk_` + base64 of its 32 raw bytes (published in the JWK Set). */
  @Column({ name: 'public_key', type: 'text', nullable: true })
  publicKey: string | null;

  /** The key pair before the last rotation, signing until previous_secret_expires_at. */
  @Column({ name: 'previous_signing_key_sealed', type: 'text', nullable: true, select: false })
  previousSigningKeySealed: string | null;

  @Column({ name: 'previous_public_key', type: 'text', nullable: true })
  previousPublicKey: string | null;

  /**
   * `webhook`: registered by a person or key (register_webhook, the portal); `event_subscription`:
   * the delivery side of an MCP Events subscription (event-feed/event-subscription.entity.ts),
   * hidden from every webhook tool and page and outside the endpoint cap (endpoint-visibility.ts).
   */
  @Column({ type: 'text', default: 'webhook' })
  purpose: EndpointPurpose;

  /** Failed attempts in a row since the last success (auto-disable at 100). */
  @Column({ name: 'consecutive_failures', type: 'int', default: 0 })
  consecutiveFailures: number;

  /** When the current run of failures began (auto-disable after 24 h). */
  @Column({ name: 'failing_since', type: 'timestamptz', nullable: true })
  failingSince: Date | null;

  /** The owner is still to be told the service disabled this endpoint. */
  @Column({ name: 'disabled_notice_due', type: 'boolean', default: false })
  disabledNoticeDue: boolean;

  /** When the owner was told this failing run had lasted an hour; null in no run, or not told yet. */
  @Column({ name: 'failing_notice_sent_at', type: 'timestamptz', nullable: true })
  failingNoticeSentAt: Date | null;

  @Column({ name: 'disabled_reason', type: 'text', nullable: true })
  disabledReason: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
