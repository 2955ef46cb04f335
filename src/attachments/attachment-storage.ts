import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { CapReachedError, NotFoundError } from '../common/errors';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { InboundAttachment, InboundAttachments } from '../conversations/inbound-attachments';
import { AttachmentStorageRepository } from './attachment-storage.repository';

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
export class AttachmentStorage implements OnModuleInit {
  constructor(
    private readonly storage: AttachmentStorageRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly inbound: InboundAttachments,
  ) {}

  onModuleInit(): void {
    this.inbound.register((tx, orgId, messageId, files) => this.storeInbound(tx, orgId, messageId, files));
  }

  /**
   * Stores the attachments of an inbound message, in its transaction, in their order. Each one
   * whose bytes fit in what is left of the org's quota is stored; one that does not keeps its row
   * (name, type, size) without bytes, marked `quota_exceeded`, and is never extracted: the message
   * is never refused over the quota. Answers the attachment ids, in order.
   */
  async storeInbound(tx: EntityManager, orgId: string, messageId: string, files: InboundAttachment[]): Promise<string[]> {
    if (files.length === 0) return [];
    // Takes the org's counter row (created on first use) until commit.
    const usage = await this.storage.lockUsage(tx, orgId);
    let left = Number(usage.quota ?? this.config.attachments.quotaBytesPerOrg) - Number(usage.used);
    let stored = 0;
    const ids: string[] = [];
    for (const file of files) {
      const fits = file.content.length === 0 || file.content.length <= left; // an empty file costs nothing
      if (fits) {
        left -= file.content.length;
        stored += file.content.length;
      }
      const id = await this.storage.insert(tx, orgId, messageId, {
        filename: file.filename,
        mimeType: file.mimeType,
        sizeBytes: file.content.length,
        content: fits ? file.content : null,
        contentStatus: fits ? 'stored' : 'quota_exceeded',
        extractionStatus: fits ? 'pending' : 'failed',
        extractionError: fits ? null : NOT_STORED,
      });
      ids.push(id);
    }
    if (stored > 0) await this.storage.addUsage(tx, orgId, stored);
    return ids;
  }

  async report(orgId: string): Promise<AttachmentStorageReport> {
    const row = await this.storage.usage(orgId);
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
    await this.storage.setQuota(orgId, quotaBytes);
    return this.report(orgId);
  }
}
