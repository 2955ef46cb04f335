import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** One HTTP attempt of a delivery, kept for the delivery log. */
@Entity({ name: 'webhook_delivery_attempts' })
export class WebhookDeliveryAttempt {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'delivery_id', type: 'uuid' })
  deliveryId: string;

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
