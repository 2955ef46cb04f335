import { Check, Column, Entity, JoinColumn, ManyToOne, PrimaryGeneratedColumn, Unique } from 'typeorm';
import { WebhookDelivery } from './webhook-delivery.entity';

/** One HTTP attempt of a delivery, kept for the delivery log. */
@Entity({ name: 'webhook_delivery_attempts' })
@Unique('webhook_delivery_attempts_delivery_id_attempt_number_key', ['deliveryId', 'attemptNumber'])
@Check('webhook_delivery_attempts_attempt_number_check', 'attempt_number >= 1')
@Check('webhook_delivery_attempts_duration_ms_check', 'duration_ms >= 0')
@Check('webhook_delivery_attempts_response_body_check', 'octet_length(response_body) <= 2048')
export class WebhookDeliveryAttempt {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'delivery_id', type: 'uuid' })
  deliveryId: string;

  @ManyToOne(() => WebhookDelivery, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'delivery_id', foreignKeyConstraintName: 'webhook_delivery_attempts_delivery_id_fkey' })
  delivery?: WebhookDelivery;

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
