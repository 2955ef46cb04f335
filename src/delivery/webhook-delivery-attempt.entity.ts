import { Check, Column, Entity, PrimaryColumn, PrimaryGeneratedColumn, Unique } from 'typeorm';

/**
 * One HTTP attempt of a delivery, kept for the delivery log. Partitioned by its delivery's day
 * (deliveryCreatedAt), so a day's attempts are dropped with the day; no foreign key to the
 * delivery (a trigger deletes the attempts of a deleted delivery).
 */
@Entity({ name: 'webhook_delivery_attempts' })
@Unique('webhook_delivery_attempts_delivery_id_attempt_number_key', ['deliveryId', 'attemptNumber', 'deliveryCreatedAt'])
@Check('webhook_delivery_attempts_attempt_number_check', 'attempt_number >= 1')
@Check('webhook_delivery_attempts_duration_ms_check', 'duration_ms >= 0')
@Check('webhook_delivery_attempts_response_body_check', 'octet_length(response_body) <= 2048')
export class WebhookDeliveryAttempt {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'delivery_id', type: 'uuid' })
  deliveryId: string;

  /** The partition key: the delivery's created_at ('-infinity' for a delivery from before partitioning; delivery-ids.ts, attemptKeyOf). */
  @PrimaryColumn({ name: 'delivery_created_at', type: 'timestamptz', precision: 3, default: () => "'-infinity'" })
  deliveryCreatedAt: Date;

  @Column({ name: 'attempt_number', type: 'int' })
  attemptNumber: number;

  @Column({ name: 'attempted_at', type: 'timestamptz' })
  attemptedAt: Date;

  @Column({ name: 'duration_ms', type: 'int' })
  durationMs: number;

  @Column({ name: 'status_code', type: 'int', nullable: true })
  statusCode: number | null;

  /** Why it failed without a usable status: timeout, connection refused, URL refused... */
  @Column({ name: 'error_kind', type: 'text', nullable: true })
  errorKind: string | null;

  /** The response body, cut to 2 KB. */
  @Column({ name: 'response_body', type: 'text', nullable: true })
  responseBody: string | null;
}
