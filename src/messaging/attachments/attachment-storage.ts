import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { CapReachedError, NotFoundError } from '../../common/errors';
import { AppConfig } from '../../config/app-config';
import { APP_CONFIG } from '../../config/config.module';

export interface AttachmentFile {
  filename: string;
  mimeType: string;
  content: Buffer;
}

export interface AttachmentStorageReport {
  orgId: string;
  /** Bytes the org may store: its own quota if an operator set one, else ATTACHMENT_QUOTA_BYTES_PER_ORG. */
  quotaBytes: number;
  source: 'default' | 'org';
  usedBytes: number;
}

/** Why an attachment kept no bytes; extraction is not attempted for it. */
const NOT_STORED = 'not extracted: the file was not stored, the organization had reached its attachment storage quota';

/** The answer for an attachment whose bytes were not stored, wherever it is read. */
export function notStoredError(attachment: { id: string; filename: string }): CapReachedError {
  return new CapReachedError(
    `attachment ${attachment.id} (${attachment.filename}) was not stored: the organization's attachment storage quota was reached when it ` +
      'arrived. Its name, type and size are kept; the file and its text are not available.',
    'attachmentId',
  );
}

/**
 * Where attachment bytes are stored, and the per-org quota on them. Usage is a counter row per
 * org, read, locked and moved in the transaction that stores the bytes, so concurrent messages of
 * one org count one after the other and nothing sums the table.
 */
@Injectable()
export class AttachmentStorage {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /**
   * Stores the attachments of an inbound message, in its transaction, in their order. Each one
   * whose bytes fit in what is left of the org's quota is stored; one that does not keeps its row
   * (name, type, size) without bytes, marked `quota_exceeded`, and is never extracted: the message
   * is never refused over the quota. Answers the attachment ids, in order.
   */
  async storeInbound(tx: EntityManager, orgId: string, messageId: string, files: AttachmentFile[]): Promise<string[]> {
    if (files.length === 0) return [];
    // Takes the org's counter row (created on first use) until commit.
    const [usage]: Array<{ used: string; quota: string | null }> = await tx.query(
      `INSERT INTO org_attachment_storage AS s (org_id) VALUES ($1)
       ON CONFLICT (org_id) DO UPDATE SET updated_at = now()
       RETURNING s.bytes_used AS used, s.quota_bytes AS quota`,
      [orgId],
    );
    let left = Number(usage.quota ?? this.config.attachments.quotaBytesPerOrg) - Number(usage.used);
    let stored = 0;
    const ids: string[] = [];
    for (const file of files) {
      const fits = file.content.length === 0 || file.content.length <= left; // an empty file costs nothing
      if (fits) {
        left -= file.content.length;
        stored += file.content.length;
      }
      const [row]: Array<{ id: string }> = await tx.query(
        // clock_timestamp(), not now(): attachments keep the order they had in the message.
        `INSERT INTO attachments (org_id, message_id, filename, mime_type, size_bytes, content, content_status, extraction_status, extraction_error, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, clock_timestamp()) RETURNING id`,
        [
          orgId,
          messageId,
          file.filename,
          file.mimeType,
          file.content.length,
          fits ? file.content : null,
          fits ? 'stored' : 'quota_exceeded',
          fits ? 'pending' : 'failed',
          fits ? null : NOT_STORED,
        ],
      );
      ids.push(row.id);
    }
    if (stored > 0) await tx.query(`UPDATE org_attachment_storage SET bytes_used = bytes_used + $2 WHERE org_id = $1`, [orgId, stored]);
    return ids;
  }

  async report(orgId: string): Promise<AttachmentStorageReport> {
    const [row]: Array<{ used: string | null; quota: string | null }> = await this.dataSource.query(
      `SELECT s.bytes_used AS used, s.quota_bytes AS quota FROM orgs o LEFT JOIN org_attachment_storage s ON s.org_id = o.id WHERE o.id = $1`,
      [orgId],
    );
    if (!row) throw NotFoundError.of('org', orgId, 'orgId');
    return {
      orgId,
      quotaBytes: Number(row.quota ?? this.config.attachments.quotaBytesPerOrg),
      source: row.quota === null ? 'default' : 'org',
      usedBytes: Number(row.used ?? 0),
    };
  }

  /** An operator's quota for one org (`null`: back to the default). Bytes already stored stay. */
  async setQuota(orgId: string, quotaBytes: number | null): Promise<AttachmentStorageReport> {
    await this.report(orgId);
    await this.dataSource.query(
      `INSERT INTO org_attachment_storage AS s (org_id, quota_bytes) VALUES ($1, $2)
       ON CONFLICT (org_id) DO UPDATE SET quota_bytes = EXCLUDED.quota_bytes, updated_at = now()`,
      [orgId, quotaBytes],
    );
    return this.report(orgId);
  }
}
