import { Check, Column, Entity, JoinColumn, ManyToOne, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import { Org } from '../accounts/org.entity';

/**
 * An org's stored attachment bytes, against its quota: updated in the transaction that stores
 * bytes, and given back when attachments are deleted (the trigger attachments_release_storage).
 */
@Entity({ name: 'org_attachment_storage' })
@Check('org_attachment_storage_bytes_used_check', 'bytes_used >= 0')
@Check('org_attachment_storage_quota_bytes_check', 'quota_bytes >= 0')
export class OrgAttachmentStorage {
  @PrimaryColumn({ name: 'org_id', type: 'uuid' })
  orgId: string;

  @ManyToOne(() => Org, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'org_id', foreignKeyConstraintName: 'org_attachment_storage_org_id_fkey' })
  org?: Org;

  @Column({ name: 'bytes_used', type: 'bigint', default: 0 })
  bytesUsed: string;

  /** An operator's override of the default quota (null: the default). */
  @Column({ name: 'quota_bytes', type: 'bigint', nullable: true })
  quotaBytes: string | null;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
