import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';
import { EventKind, PayloadMode } from '../webhooks/webhook.types';

export const DELIVERY_STATUSES = ['pending', 'retrying', 'succeeded', 'failed', 'cancelled'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** One event dispatched to one endpoint: the unit that is signed, sent, retried and logged. */
@Entity({ name: 'webhook_deliveries' })
export class WebhookDelivery {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  /** The envelope id, `evt_` + 32 lowercase hex; retries keep it. */
  @Column({ name: 'event_id', type: 'text' })
  eventId: string;

  @Column({ name: 'endpoint_id', type: 'uuid' })
  endpointId: string;

  @Column({ name: 'user_id', type: 'uuid' })
  userId: string;

  /** The outbox event this delivery came from (null for a resend copy's own origin). */
  @Column({ name: 'source_event_id', type: 'bigint', nullable: true })
  sourceEventId: string | null;

  /** The line of the event (null for org-wide events): what a line-limited key may see of it. */
  @Column({ name: 'line_id', type: 'uuid', nullable: true })
  lineId: string | null;

  @Column({ name: 'resent_from_id', type: 'uuid', nullable: true })
  resentFromId: string | null;

  @Column({ name: 'event_type', type: 'text' })
  eventType: EventKind;

  @Column({ type: 'text' })
  mode: PayloadMode;

  /** The envelope's `data`, built once at dispatch: a webhook_payloads row, shared by every delivery with the same content. */
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

  @Column({ name: 'next_attempt_at', type: 'timestamptz', nullable: true })
  nextAttemptAt: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
