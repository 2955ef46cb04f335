import { Check, Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/**
 * The `data` of deliveries, stored once per distinct content and day: the deliveries of a day to
 * endpoints with the same variant (mode, history) point at one row. Keyed by the SHA-256 of the
 * JSON text and the day (created_at = the start of its deliveries' UTC day, the partition key);
 * dropped with its day (docs/delivery-log.md).
 */
@Entity({ name: 'webhook_payloads' })
@Index('webhook_payloads_digest_key', ['digest', 'createdAt'], { unique: true })
@Index('webhook_payloads_created_idx', ['createdAt'])
@Check('webhook_payloads_digest_check', 'octet_length(digest) = 32')
export class WebhookPayload {
  /** From the sequence webhook_payloads_id_seq, owned by the partitioned parent (migration PayloadIdSequence). */
  @PrimaryGeneratedColumn('increment', { type: 'bigint' })
  id: string;

  @Column({ type: 'bytea' })
  digest: Buffer;

  @Column({ type: 'json' })
  data: object;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz', precision: 3, primary: true })
  createdAt: Date;
}
