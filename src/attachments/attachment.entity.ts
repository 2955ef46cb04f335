import { Check, Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { Org } from '../accounts/org.entity';
import { Message } from '../conversations/message.entity';
import { ExtractionStatus } from './attachment-view';

/**
 * A file of a message, with the text extracted from it. Deleting attachments gives their stored
 * bytes back to org_attachment_storage: the trigger attachments_release_storage (migration
 * AttachmentQuota) does it, so that cascades count too; TypeORM has no notion of triggers.
 */
@Entity({ name: 'attachments' })
@Index('attachments_message_idx', ['messageId'])
// The extraction sweeps look for work whose job was lost (pending) or whose worker died (extracting).
@Index('attachments_extraction_open_idx', ['createdAt'], { where: "extraction_status IN ('pending', 'extracting')" })
// search_messages: a GIN index on an expression (filename and extracted text), which @Index cannot declare: made
// by the migration MessageSearch, left alone by TypeORM (synchronize: false); its expression is SearchRepository's.
@Index('attachments_search_idx', { synchronize: false })
@Check('attachments_size_bytes_check', 'size_bytes >= 0')
@Check('attachments_extraction_status_check', "extraction_status IN ('pending', 'extracting', 'extracted', 'failed')")
@Check('attachments_content_status_check', "content_status IN ('stored', 'quota_exceeded')")
@Check('attachments_content_check', "(content IS NULL) = (content_status <> 'stored')")
export class Attachment {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'org_id', type: 'uuid' })
  orgId: string;

  @ManyToOne(() => Org, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'org_id', foreignKeyConstraintName: 'attachments_org_id_fkey' })
  org?: Org;

  @Column({ name: 'message_id', type: 'uuid' })
  messageId: string;

  @ManyToOne(() => Message, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'message_id', foreignKeyConstraintName: 'attachments_message_id_fkey' })
  message?: Message;

  @Column({ type: 'text' })
  filename: string;

  @Column({ name: 'mime_type', type: 'text' })
  mimeType: string;

  @Column({ name: 'size_bytes', type: 'int' })
  sizeBytes: number;

  /** The file's bytes; null when content_status is quota_exceeded. */
  @Column({ type: 'bytea', nullable: true })
  content: Buffer | null;

  /** pending → extracting (claimed by a job, extraction_started_at) → extracted or failed; attempted once. */
  @Column({ name: 'extraction_status', type: 'text', default: 'pending' })
  extractionStatus: ExtractionStatus;

  @Column({ name: 'extracted_text', type: 'text', nullable: true })
  extractedText: string | null;

  @Column({ name: 'text_length', type: 'int', default: 0 })
  textLength: number;

  @Column({ name: 'extraction_error', type: 'text', nullable: true })
  extractionError: string | null;

  @Column({ name: 'extracted_at', type: 'timestamptz', precision: 3, nullable: true })
  extractedAt: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'extraction_started_at', type: 'timestamptz', precision: 3, nullable: true })
  extractionStartedAt: Date | null;

  /** stored: the bytes are in `content`; quota_exceeded: the org's quota had no room for them (content null). */
  @Column({ name: 'content_status', type: 'text', default: 'stored' })
  contentStatus: 'stored' | 'quota_exceeded';
}
