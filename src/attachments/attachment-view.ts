import { ExtractedAttachment } from '../events/event-payloads';

export type ExtractionStatus = 'pending' | 'extracting' | 'extracted' | 'failed';

/** An attachment as tools show it (read_attachment): what it is and where its extraction stands. */
export interface AttachmentView {
  id: string;
  filename: string;
  mimeType: string;
  sizeBytes: number;
  messageId: string;
  extractionStatus: ExtractionStatus;
  textLength: number;
  hasText: boolean;
  extractedAt: string | null;
  extractionError: string | null;
}

/** The attachment columns a view is made of. */
export interface AttachmentViewRow {
  id: string;
  filename: string;
  mime_type: string;
  size_bytes: number;
  message_id: string;
  extraction_status: ExtractionStatus;
  text_length: number;
  extracted_at: Date | null;
  extraction_error: string | null;
}

/** The one mapping from an attachment row to what tools and events show of it. */
export function toAttachmentView(row: AttachmentViewRow): AttachmentView {
  return {
    id: row.id,
    filename: row.filename,
    mimeType: row.mime_type,
    sizeBytes: row.size_bytes,
    messageId: row.message_id,
    extractionStatus: row.extraction_status,
    textLength: row.text_length,
    hasText: row.text_length > 0,
    extractedAt: row.extracted_at?.toISOString() ?? null,
    extractionError: row.extraction_error,
  };
}

/** The attachment of an attachment.extracted event: the view without the extraction fields the event itself stands for. */
export function toExtractedAttachment(row: AttachmentViewRow & { extracted_at: Date }): ExtractedAttachment {
  const { id, filename, mimeType, sizeBytes, messageId, textLength, hasText } = toAttachmentView(row);
  return { id, filename, mimeType, sizeBytes, messageId, textLength, hasText, extractedAt: row.extracted_at.toISOString() };
}
