import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { Principal } from '../identity/principal';
import { ATTACHMENT_URL_VALIDITY_MS, AttachmentUrls, SignedLinkQuery } from '../common/attachment-urls';
import { Clock } from '../common/clock';
import { DomainError, ForbiddenError, NotFoundError } from '../common/errors';
import { CalendarEventData } from '../events/event-payloads';
import { toCalendarEventData } from './attachment-extraction.service';
import { notStoredError } from './attachment-storage';
import { AttachmentView, ExtractionStatus, toAttachmentView } from './attachment-view';
import { AttachmentsRepository } from './attachments.repository';
import { nextOffsetOf, RESULT_BOUNDS } from '../common/result-bounds';
import { isUuid } from '../common/uuid';

export interface AttachmentReadResult {
  attachment: AttachmentView;
  /** The extracted text from `offset`, at most `maxChars` characters. */
  text: string | null;
  /** Where the next call reads on; null when this one reached the end (or there is no text). */
  nextOffset: number | null;
  calendarEvents: CalendarEventData[];
  calendarEventCount: number;
  downloadUrl: string;
  downloadUrlExpiresAt: string;
  note: string | null;
}

/** Reading attachments: their extracted text for a caller (read_attachment), their bytes by signed link. */
@Injectable()
export class AttachmentsService {
  constructor(
    private readonly attachments: AttachmentsRepository,
    private readonly urls: AttachmentUrls,
    private readonly clock: Clock,
  ) {}

  /** read_attachment: the attachment, a window of its extracted text (code points from `offset`), and its first calendar events. */
  async read(
    caller: Principal,
    attachmentId: string,
    { offset = 0, maxChars = RESULT_BOUNDS.attachmentChars }: { offset?: number; maxChars?: number } = {},
  ): Promise<AttachmentReadResult> {
    const [outcome] = await this.readEach(caller, [attachmentId], { offset, maxChars });
    if (outcome instanceof DomainError) throw outcome;
    return outcome;
  }

  /**
   * read for each of `attachmentIds` at once (two statements, whatever their number), with
   * `manager` (the caller's transaction: the thread page reads them in its snapshot): each one's
   * answer, or the error read would throw for it. An attachment of a message on a thread of a line
   * the caller may use; anything else reads as not found.
   */
  async readEach(
    caller: Principal,
    attachmentIds: string[],
    { offset = 0, maxChars = RESULT_BOUNDS.attachmentChars }: { offset?: number; maxChars?: number },
    manager?: EntityManager,
  ): Promise<Array<AttachmentReadResult | DomainError>> {
    if (attachmentIds.length === 0) return [];
    const rows = await this.attachments.readable(caller, attachmentIds, { offset, maxChars }, manager);
    const stored = rows.filter((row) => row.content_status === 'stored');
    const events = stored.length ? await this.attachments.calendarEvents(stored, RESULT_BOUNDS.calendarEvents, RESULT_BOUNDS.attendeesPerEvent, manager) : [];
    const now = this.clock.now();
    const rowOf = new Map(rows.map((row) => [row.id, row]));
    return attachmentIds.map((attachmentId) => {
      // PostgreSQL answers ids in lowercase; a caller may name one in either case (the one id rule).
      const row = rowOf.get(attachmentId.toLowerCase());
      if (!row) return NotFoundError.of('attachment', attachmentId, 'attachmentId');
      if (row.content_status !== 'stored') return notStoredError(row);
      const extracted = row.extraction_status === 'extracted';
      let nextOffset: number | null;
      try {
        nextOffset = extracted ? nextOffsetOf({ offset, maxChars }, { of: 'text', name: 'textLength', value: row.text_length }) : null;
      } catch (error) {
        if (error instanceof DomainError) return error;
        throw error;
      }
      return {
        attachment: toAttachmentView(row),
        text: extracted ? (row.extracted_text ?? '') : null,
        nextOffset,
        calendarEvents: events
          .filter((e) => e.attachment_id === row.id)
          .map((e) =>
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
        calendarEventCount: row.calendar_event_count,
        downloadUrl: this.urls.sign(row.id, { userId: caller.userId, keyId: caller.keyId }, now),
        downloadUrlExpiresAt: new Date(Math.floor((now.getTime() + ATTACHMENT_URL_VALIDITY_MS) / 1000) * 1000).toISOString(),
        note: note(row.extraction_status, row.text_length, row.extraction_error),
      };
    });
  }

  /**
   * The bytes behind a signed download link, while whoever it was minted for may still see the
   * attachment's line: 403 for a bad or expired signature (or a link of the earlier form, which
   * names no holder), 404 for no such attachment, and the same 404 when the holder's access has
   * ended (membership removed, line deleted, user gone, key revoked or narrowed): nothing tells
   * the two apart.
   */
  async download(attachmentId: string, query: SignedLinkQuery): Promise<{ filename: string; mimeType: string; content: Buffer }> {
    const holder = this.urls.verify(attachmentId, query, this.clock.now());
    if (!holder) {
      throw new ForbiddenError('the download link is invalid or has expired; ask for a new one (read_attachment or the webhook gives one valid 1 hour)');
    }
    // read_attachment, which mints links for keys, is a `read` tool: a key must still hold that permission.
    const row = isUuid(attachmentId) ? await this.attachments.fileForHolder(attachmentId, holder, 'read') : undefined;
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
