import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Caller } from '../../auth/caller';
import { ATTACHMENT_URL_VALIDITY_MS, AttachmentUrls } from '../../common/attachment-urls';
import { Clock } from '../../common/clock';
import { ForbiddenError, NotFoundError } from '../../common/errors';
import { CalendarEventData } from '../../events/event-payloads';
import { toCalendarEventData } from './attachment-extraction.service';
import { notStoredError } from './attachment-storage';

export type ExtractionStatus = 'pending' | 'extracting' | 'extracted' | 'failed';
/** Whether the bytes were stored, or skipped because the org's attachment storage quota was reached. */
export type ContentStatus = 'stored' | 'quota_exceeded';

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

export interface AttachmentReadResult {
  attachment: AttachmentView;
  text: string | null;
  calendarEvents: CalendarEventData[];
  downloadUrl: string;
  downloadUrlExpiresAt: string;
  note: string | null;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Reading attachments: their extracted text for a caller (read_attachment), their bytes by signed link. */
@Injectable()
export class AttachmentsService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly urls: AttachmentUrls,
    private readonly clock: Clock,
  ) {}

  /** An attachment of a message on a thread of a line the caller may use; anything else reads as not found. */
  async read(caller: Caller, attachmentId: string): Promise<AttachmentReadResult> {
    const [row]: Array<{
      id: string;
      filename: string;
      mime_type: string;
      size_bytes: number;
      message_id: string;
      extraction_status: ExtractionStatus;
      extracted_text: string | null;
      text_length: number;
      extraction_error: string | null;
      extracted_at: Date | null;
      content_status: ContentStatus;
    }> = await this.dataSource.query(
      `SELECT a.id, a.filename, a.mime_type, a.size_bytes, a.message_id, a.extraction_status, a.extracted_text, a.text_length,
              a.extraction_error, a.extracted_at, a.content_status
         FROM attachments a
         JOIN messages m ON m.id = a.message_id
         JOIN threads t ON t.id = m.thread_id
         JOIN lines l ON l.id = t.line_id AND l.deleted_at IS NULL
        WHERE a.id = $1 AND a.org_id = $2 AND t.org_id = $2 AND t.line_id = ANY ($3::uuid[])`,
      [attachmentId, caller.orgId, caller.lines.map((l) => l.id)],
    );
    if (!row) throw NotFoundError.of('attachment', attachmentId, 'attachmentId');
    if (row.content_status !== 'stored') throw notStoredError(row);
    const events: Array<{
      id: string;
      uid: string;
      method: string | null;
      status: string | null;
      summary: string | null;
      starts_at: Date | null;
      ends_at: Date | null;
      organizer_email: string | null;
      attendee_emails: string[];
    }> = await this.dataSource.query(
      `SELECT id, uid, method, status, summary, starts_at, ends_at, organizer_email, attendee_emails
         FROM calendar_events WHERE attachment_id = $1 ORDER BY starts_at NULLS LAST, uid, id`,
      [row.id],
    );
    const now = this.clock.now();
    return {
      attachment: {
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
      },
      text: row.extraction_status === 'extracted' ? (row.extracted_text ?? '') : null,
      calendarEvents: events.map((e) =>
        toCalendarEventData({
          id: e.id,
          uid: e.uid,
          method: e.method,
          status: e.status,
          summary: e.summary,
          startsAt: e.starts_at,
          endsAt: e.ends_at,
          organizerEmail: e.organizer_email,
          attendeeEmails: e.attendee_emails,
        }),
      ),
      downloadUrl: this.urls.sign(row.id, now),
      downloadUrlExpiresAt: new Date(Math.floor((now.getTime() + ATTACHMENT_URL_VALIDITY_MS) / 1000) * 1000).toISOString(),
      note: note(row.extraction_status, row.text_length, row.extraction_error),
    };
  }

  /** The bytes behind a signed download link: 403 for a bad or expired signature, 404 for no such attachment. */
  async download(attachmentId: string, expires: string | undefined, sig: string | undefined): Promise<{ filename: string; mimeType: string; content: Buffer }> {
    if (!this.urls.verify(attachmentId, expires, sig, this.clock.now())) {
      throw new ForbiddenError('the download link is invalid or has expired; ask for a new one (read_attachment or the webhook gives one valid 1 hour)');
    }
    const [row]: Array<{ filename: string; mime_type: string; content: Buffer | null }> = UUID.test(attachmentId)
      ? await this.dataSource.query(`SELECT filename, mime_type, content FROM attachments WHERE id = $1`, [attachmentId])
      : [];
    if (!row) throw NotFoundError.of('attachment', attachmentId);
    if (row.content === null) throw notStoredError({ id: attachmentId, filename: row.filename });
    return { filename: row.filename, mimeType: row.mime_type, content: row.content };
  }
}

function note(status: ExtractionStatus, textLength: number, error: string | null): string | null {
  switch (status) {
    case 'pending':
    case 'extracting':
      return 'Text extraction has not finished yet: text is null for now. The attachment.extracted event fires when it has; read the attachment again then.';
    case 'failed':
      return `No text could be extracted (${error ?? 'unknown error'}); extraction is not retried. The file can still be downloaded.`;
    case 'extracted':
      return textLength === 0 ? 'Extraction finished but the file has no text (e.g. a scan with no legible words, or an empty document).' : null;
  }
}
