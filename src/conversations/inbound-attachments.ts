import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';

/** A file that came with an inbound message. */
export interface InboundAttachment {
  filename: string;
  mimeType: string;
  content: Buffer;
}

/** Stores an inbound message's files in its transaction, in their order; answers the attachment ids. */
export type StoreInboundAttachments = (tx: EntityManager, orgId: string, messageId: string, files: InboundAttachment[]) => Promise<string[]>;

/**
 * Where the files of an inbound message go: attachments/ registers its storage (bytes, the org's
 * quota) here, so conversations record a message with its files without importing attachments/.
 */
@Injectable()
export class InboundAttachments {
  private store?: StoreInboundAttachments;

  register(store: StoreInboundAttachments): void {
    if (this.store) throw new Error('inbound attachment storage is registered twice');
    this.store = store;
  }

  storeInbound(tx: EntityManager, orgId: string, messageId: string, files: InboundAttachment[]): Promise<string[]> {
    if (files.length === 0) return Promise.resolve([]);
    if (!this.store) throw new Error('no inbound attachment storage is registered: the attachments module is not loaded');
    return this.store(tx, orgId, messageId, files);
  }
}
