import { Check, Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';
import { User } from '../accounts/user.entity';
import { WebhookEndpoint } from '../webhooks/webhook-endpoint.entity';
import { EventKind, PayloadMode } from '../webhooks/webhook.types';

export const DELIVERY_STATUSES = ['pending', 'retrying', 'succeeded', 'failed', 'cancelled'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/**
 * One event dispatched to one endpoint: the unit that is signed, sent, retried and logged.
 * Partitioned by UTC day of created_at (migration DeliveryLogPartitions, docs/delivery-log.md):
 * the primary key and unique keys hold the partition key; no foreign key points at it.
 */
@Entity({ name: 'webhook_deliveries' })
// One delivery per (outbox event, endpoint) in a day; resends are copies outside it (insertFannedOut checks earlier days).
@Index('webhook_deliveries_source_endpoint_key', ['sourceEventId', 'endpointId', 'createdAt'], {
  unique: true,
  where: 'source_event_id IS NOT NULL AND resent_from_id IS NULL',
})
// Created as (endpoint_id, created_at DESC, id DESC): @Index has no column direction (see test/database/schema.e2e-spec.ts).
@Index('webhook_deliveries_endpoint_page_idx', ['endpointId', 'createdAt', 'id'])
// The log filtered by a status other than succeeded: (endpoint_id, status, created_at DESC, id DESC), partial.
@Index('webhook_deliveries_endpoint_status_idx', ['endpointId', 'status', 'createdAt', 'id'], { where: "status <> 'succeeded'" })
@Index('webhook_deliveries_due_idx', ['nextAttemptAt'], { where: "status IN ('pending', 'retrying')" })
@Index('webhook_deliveries_payload_idx', ['payloadId'])
@Index('webhook_deliveries_finished_idx', ['createdAt'], { where: "status IN ('succeeded', 'failed', 'cancelled')" })
@Index('webhook_deliveries_resent_from_idx', ['resentFromId'], { where: 'resent_from_id IS NOT NULL' })
// What a recovery looks for: the failed deliveries not yet recovered, by endpoint and event time.
@Index('webhook_deliveries_recover_idx', ['endpointId', 'eventCreatedAt', 'id'], { where: "status = 'failed' AND recovered_at IS NULL" })
@Check('webhook_deliveries_event_id_check', "event_id ~ '^evt_[0-9a-f]{32}$'")
// The event kinds of src/events/event-kinds.ts, as the migration wrote them down.
@Check(
  'webhook_deliveries_event_type_check',
  "event_type = ANY (ARRAY['message.received', 'message.sent', 'message.status_changed', 'thread.created', 'email.opened', 'attachment.extracted', 'contact.merged', 'email_account.health_changed', 'agent_turn.awaiting_approval', 'agent_turn.sent', 'sms.opted_out', 'sms.opted_in', 'agent_turn.rejected'])",
)
@Check('webhook_deliveries_mode_check', "mode IN ('concise', 'verbose')")
@Check('webhook_deliveries_status_check', "status IN ('pending', 'retrying', 'succeeded', 'failed', 'cancelled')")
@Check('webhook_deliveries_attempt_count_check', 'attempt_count >= 0')
@Check('webhook_deliveries_success_duration_ms_check', 'success_duration_ms >= 0')
@Check('webhook_deliveries_success_response_body_check', 'octet_length(success_response_body) <= 2048')
export class WebhookDelivery {
  /** A UUIDv7 whose time is createdAt, set by a trigger on insert (delivery-ids.ts); a v4 for a delivery from before partitioning. */
  @PrimaryGeneratedColumn('uuid')
  id: string;

  /**
   * The envelope id, `evt_` + the id's 32 hex (before partitioning: random); retries keep it. Unique
   * through the primary key, not an index of its own (migration DeliveryEventIdFromId).
   */
  @Column({ name: 'event_id', type: 'text' })
  eventId: string;

  @Column({ name: 'endpoint_id', type: 'uuid' })
  endpointId: string;

  @ManyToOne(() => WebhookEndpoint, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'endpoint_id', foreignKeyConstraintName: 'webhook_deliveries_endpoint_id_fkey' })
  endpoint?: WebhookEndpoint;

  @Column({ name: 'user_id', type: 'uuid' })
  userId: string;

  @ManyToOne(() => User, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'user_id', foreignKeyConstraintName: 'webhook_deliveries_user_id_fkey' })
  user?: User;

  /** The outbox event this delivery came from (null for a resend copy's own origin). */
  @Column({ name: 'source_event_id', type: 'bigint', nullable: true })
  sourceEventId: string | null;

  /**
   * The line of the event (null for org-wide events): what a line-limited key may see of it. No
   * foreign key: lines are never hard-deleted while referenced (migration DeliveryLine).
   */
  @Column({ name: 'line_id', type: 'uuid', nullable: true })
  lineId: string | null;

  /** The delivery this one resends; no foreign key (it would block dropping a day): the original may be gone. */
  @Column({ name: 'resent_from_id', type: 'uuid', nullable: true })
  resentFromId: string | null;

  @Column({ name: 'event_type', type: 'text' })
  eventType: EventKind;

  @Column({ type: 'text' })
  mode: PayloadMode;

  /**
   * The envelope's `data`, built once at dispatch: a webhook_payloads row in this delivery's day,
   * shared by the day's deliveries with the same content (delivery-ids.ts, payloadOf). No foreign key.
   */
  @Column({ name: 'payload_id', type: 'bigint' })
  payloadId: string;

  /** The envelope's `createdAt`. */
  @Column({ name: 'event_created_at', type: 'timestamptz' })
  eventCreatedAt: Date;

  @Column({ type: 'text' })
  status: DeliveryStatus;

  @Column({ name: 'attempt_count', type: 'int', default: 0 })
  attemptCount: number;

  @Column({ name: 'last_status_code', type: 'int', nullable: true })
  lastStatusCode: number | null;

  @Column({ name: 'last_error', type: 'text', nullable: true })
  lastError: string | null;

  @Column({ name: 'last_attempt_at', type: 'timestamptz', nullable: true })
  lastAttemptAt: Date | null;

  /**
   * The attempt that succeeded, recorded on this row rather than as a webhook_delivery_attempts row
   * (migration SuccessOnDelivery): its duration and response body (cut to 2 KB); its number, time and
   * status code are attemptCount, lastAttemptAt and lastStatusCode. Null for any other delivery, and
   * for one whose success has its attempt row (recorded before the migration, or after its delivery
   * had stopped waiting).
   */
  @Column({ name: 'success_duration_ms', type: 'int', nullable: true })
  successDurationMs: number | null;

  @Column({ name: 'success_response_body', type: 'text', nullable: true })
  successResponseBody: string | null;

  @Column({ name: 'next_attempt_at', type: 'timestamptz', nullable: true })
  nextAttemptAt: Date | null;

  /**
   * Until when a worker holds the attempt it claimed; the sweep re-drives the delivery after it.
   * In no index, so that a claim is a heap-only update (migration DeliveryLease).
   */
  @Column({ name: 'lease_until', type: 'timestamptz', nullable: true })
  leaseUntil: Date | null;

  /** When recover_webhook_deliveries resent this failed delivery (its copy has resentFromId = this id); null if never. */
  @Column({ name: 'recovered_at', type: 'timestamptz', nullable: true })
  recoveredAt: Date | null;

  /** The W3C traceparent of the relay's span for the event; each attempt is its child. Null when tracing is off. */
  @Column({ name: 'trace_parent', type: 'text', nullable: true })
  traceParent: string | null;

  /** The partition key. */
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz', precision: 3, primary: true })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
