import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { queryNamed } from '../database/sql';

/** Whether the bytes were stored, or skipped because the org's attachment storage quota was reached. */
export type ContentStatus = 'stored' | 'quota_exceeded';

/** An org's attachment storage counter: bytes used, and its own quota if an operator set one (bigints, as text). */
export interface StorageUsageRow {
  used: string;
  quota: string | null;
}

/** An attachment row as an inbound message stores it: with its bytes, or without them over the quota. */
export interface NewAttachment {
  filename: string;
  mimeType: string;
  sizeBytes: number;
  content: Buffer | null;
  contentStatus: ContentStatus;
  /** Failed at once, and never extracted, when the bytes were not stored. */
  extractionStatus: 'pending' | 'failed';
  extractionError: string | null;
}

/**
 * SQL of attachment storage: the attachment rows an inbound message stores and the per-org
 * counter (org_attachment_storage) of their bytes. Every method takes the org id and works on
 * that org's rows; the inbound ones run in the message's transaction. Rules (what fits in the
 * quota) live in AttachmentStorage.
 */
@Injectable()
export class AttachmentStorageRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** The org's counter row (created on first use), locked until the transaction ends. */
  async lockUsage(manager: EntityManager, orgId: string): Promise<StorageUsageRow> {
    const [usage] = await queryNamed<StorageUsageRow[]>(
      manager,
      `INSERT INTO org_attachment_storage AS s (org_id) VALUES (:orgId)
       ON CONFLICT (org_id) DO UPDATE SET updated_at = now()
       RETURNING s.bytes_used AS used, s.quota_bytes AS quota`,
      { orgId },
    );
    return usage;
  }

  /** Inserts an attachment of the org's message; answers its id. */
  async insert(manager: EntityManager, orgId: string, messageId: string, file: NewAttachment): Promise<string> {
    const [row] = await queryNamed<Array<{ id: string }>>(
      manager,
      // clock_timestamp(), not now(): attachments keep the order they had in the message.
      `INSERT INTO attachments (org_id, message_id, filename, mime_type, size_bytes, content, content_status, extraction_status, extraction_error, created_at)
         VALUES (:orgId, :messageId, :filename, :mimeType, :sizeBytes, :content, :contentStatus, :extractionStatus, :extractionError, clock_timestamp()) RETURNING id`,
      {
        orgId,
        messageId,
        filename: file.filename,
        mimeType: file.mimeType,
        sizeBytes: file.sizeBytes,
        content: file.content,
        contentStatus: file.contentStatus,
        extractionStatus: file.extractionStatus,
        extractionError: file.extractionError,
      },
    );
    return row.id;
  }

  /** Adds stored bytes to the org's counter (locked by lockUsage in the same transaction). */
  async addUsage(manager: EntityManager, orgId: string, bytes: number): Promise<void> {
    await queryNamed(manager, `UPDATE org_attachment_storage SET bytes_used = bytes_used + :bytes WHERE org_id = :orgId`, { orgId, bytes });
  }

  /** For an operator: the org's usage and own quota (null columns when it never stored any); undefined when there is no such org. */
  async usage(orgId: string): Promise<{ used: string | null; quota: string | null } | undefined> {
    const [row] = await queryNamed<Array<{ used: string | null; quota: string | null }>>(
      this.dataSource.manager,
      `SELECT s.bytes_used AS used, s.quota_bytes AS quota FROM orgs o LEFT JOIN org_attachment_storage s ON s.org_id = o.id WHERE o.id = :orgId`,
      { orgId },
    );
    return row;
  }

  /** For an operator: sets the org's own quota (null: none, the default applies). */
  async setQuota(orgId: string, quotaBytes: number | null): Promise<void> {
    await queryNamed(
      this.dataSource.manager,
      `INSERT INTO org_attachment_storage AS s (org_id, quota_bytes) VALUES (:orgId, :quotaBytes)
       ON CONFLICT (org_id) DO UPDATE SET quota_bytes = EXCLUDED.quota_bytes, updated_at = now()`,
      { orgId, quotaBytes },
    );
  }
}
