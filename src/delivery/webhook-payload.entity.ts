import { Check, Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/**
 * The `data` of deliveries, stored once per distinct content: the deliveries of one event to
 * endpoints with the same variant (mode, history) and the resends of a delivery all point at one
 * row. Keyed by the SHA-256 of the JSON text; deleted by the delivery log retention once no
 * delivery refers to it.
 */
@Entity({ name: 'webhook_payloads' })
@Index('webhook_payloads_digest_key', ['digest'], { unique: true })
@Index('webhook_payloads_created_idx', ['createdAt'])
@Check('webhook_payloads_digest_check', 'octet_length(digest) = 32')
export class WebhookPayload {
  @PrimaryGeneratedColumn('identity', { type: 'bigint', generatedIdentity: 'ALWAYS' })
  id: string;

  @Column({ type: 'bytea' })
  digest: Buffer;

  @Column({ type: 'json' })
  data: object;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;
}
