import { Check, Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import { WebhookEndpoint } from '../webhooks/webhook-endpoint.entity';

/**
 * An MCP Events webhook subscription (events/subscribe; docs/mcp.md, "Webhook mode"). What the
 * delivery engine needs (URL, the client's sealed secret, kind, mode, status, failures) lives on
 * its endpoint row (purpose `event_subscription`); this row holds who subscribed, what to, and
 * until when (docs/decisions.md, "Event subscriptions ride on endpoint rows").
 */
@Entity({ name: 'event_subscriptions' })
@Index('event_subscriptions_endpoint_key', ['endpointId'], { unique: true })
@Index('event_subscriptions_key_idx', ['keyId'])
@Index('event_subscriptions_expires_idx', ['expiresAt'])
@Check('event_subscriptions_id_check', "id ~ '^sub_[0-9a-f]{32}$'")
@Check('event_subscriptions_scope_check', "scope ~ '^[0-9a-f]{16}$'")
export class EventSubscription {
  /** `sub_` + 32 hex of SHA-256 over (credential, url, name, arguments): the same subscribe gives the same id, across restarts. */
  @PrimaryColumn({ type: 'text' })
  id: string;

  @Column({ name: 'endpoint_id', type: 'uuid' })
  endpointId: string;

  // One to one: the unique index event_subscriptions_endpoint_key says so (a OneToOne would add a second, unnamed constraint).
  @ManyToOne(() => WebhookEndpoint, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'endpoint_id', foreignKeyConstraintName: 'event_subscriptions_endpoint_id_fkey' })
  endpoint?: WebhookEndpoint;

  /** The API key or OAuth grant that subscribed: its permission and lines are checked at fan-out and at each attempt. */
  @Column({ name: 'key_id', type: 'uuid' })
  keyId: string;

  @Column({ type: 'text' })
  name: string;

  /** The arguments as given (canonical JSON), part of the id. */
  @Column({ type: 'jsonb' })
  arguments: object;

  /** The feed scope of the event name and filters: what the cursors of its deliveries are bound to (feed-cursor.ts). */
  @Column({ type: 'text' })
  scope: string;

  @Column({ name: 'line_id', type: 'uuid', nullable: true })
  lineId: string | null;

  @Column({ type: 'text', nullable: true })
  thread: string | null;

  @Column({ type: 'text', nullable: true })
  direction: string | null;

  @Column({ type: 'text', nullable: true })
  label: string | null;

  /** No delivery is made or attempted after it; the sweep then deletes the subscription and its endpoint row. */
  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
