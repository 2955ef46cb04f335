import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { Principal } from '../identity/principal';
import { KeyPermission } from '../identity/key-permissions';
import { callerLines, keyAllowsLine, liveLineOfUser } from '../identity/line-access.sql';
import { LinkHolder } from '../common/attachment-urls';
import { queryNamed } from '../database/sql';
import { ContentStatus } from './attachment-storage.repository';
import { AttachmentViewRow } from './attachment-view';
import { ParsedCalendarEvent } from './extractors/extraction.types';

/** An attachment as read_attachment reads it for a caller: `extracted_text` is the window the call asked for. */
export interface CallerAttachmentRow extends AttachmentViewRow {
  extracted_text: string | null;
  calendar_event_count: number;
  content_status: ContentStatus;
}

/** A calendar event found in an attachment. */
export interface CalendarEventRow {
  id: string;
  attachment_id: string;
  uid: string;
  method: string | null;
  status: string | null;
  summary: string | null;
  starts_at: Date | null;
  ends_at: Date | null;
  organizer_email: string | null;
  attendee_emails: string[];
}

/** A claimed attachment's file, for its extraction. */
export interface ClaimedFileRow {
  filename: string;
  mime_type: string;
  size_bytes: number;
  content: Buffer;
}

/** A finished extraction: the attachment's view, with the message's org and line for its event. */
export type FinishedAttachmentRow = AttachmentViewRow & { extracted_at: Date; org_id: string; line_id: string };

/** What an extraction ended with, as stored. */
export interface ExtractionResult {
  status: 'extracted' | 'failed';
  text: string | null;
  textLength: number;
  error: string | null;
}

/**
 * SQL of reading attachments and extracting their text. read_attachment's reads take the
 * `Principal` (or the row read for it) and keep to the lines it may see (callerLines); the signed download
 * reads for the holder its link was minted for (signature checked), with that holder's live line
 * access; the extraction methods act for the system, the job and sweep on attachment ids they hold. Worker threads never
 * touch the database: the job reads the file here and hands them the bytes. Rules live in
 * AttachmentsService and AttachmentExtractionService.
 */
@Injectable()
export class AttachmentsRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * These attachments of the caller's org, each of a message on a thread of a line the caller may
   * see (callerLines), with `manager` (the caller's transaction, or none); one the caller may not
   * see has no row.
   */
  async readable(
    caller: Principal,
    attachmentIds: string[],
    window: { offset: number; maxChars: number },
    manager: EntityManager = this.dataSource.manager,
  ): Promise<CallerAttachmentRow[]> {
    const scope = callerLines(caller, 't.line_id', 't.org_id');
    return queryNamed<CallerAttachmentRow[]>(
      manager,
      `SELECT a.id, a.filename, a.mime_type, a.size_bytes, a.message_id, a.extraction_status,
              substr(a.extracted_text, :offset + 1, :maxChars) AS extracted_text, a.text_length,
              a.extraction_error, a.extracted_at, a.content_status,
              (SELECT count(*)::int FROM calendar_events ce WHERE ce.attachment_id = a.id) AS calendar_event_count
         FROM attachments a
         JOIN messages m ON m.id = a.message_id
         JOIN threads t ON t.id = m.thread_id
        WHERE a.id = ANY (:attachmentIds::uuid[]) AND a.org_id = :orgId AND ${scope.sql}`,
      { attachmentIds, orgId: caller.orgId, ...scope.parameters, ...window },
    );
  }

  /**
   * The first `limit` calendar events of each attachment readable() answered, by start; each with
   * its first `attendees` attendees.
   */
  calendarEvents(
    attachments: CallerAttachmentRow[],
    limit: number,
    attendees: number,
    manager: EntityManager = this.dataSource.manager,
  ): Promise<CalendarEventRow[]> {
    return queryNamed(
      manager,
      `SELECT id, attachment_id, uid, method, status, summary, starts_at, ends_at, organizer_email, attendee_emails
         FROM (SELECT id, attachment_id, uid, method, status, summary, starts_at, ends_at, organizer_email,
                      attendee_emails[1:(:attendees)::int] AS attendee_emails,
                      row_number() OVER (PARTITION BY attachment_id ORDER BY starts_at NULLS LAST, uid, id) AS n
                 FROM calendar_events WHERE attachment_id = ANY (:attachmentIds::uuid[])) e
        WHERE n <= :limit
        ORDER BY attachment_id, n`,
      { attachmentIds: attachments.map((a) => a.id), limit, attendees },
    );
  }

  /**
   * For a signed download link (its signature checked): the file, while the link's holder may still
   * see its line (line-access.sql.ts): the user still of the attachment's org with a membership of
   * the live line, and, for a link minted through an API key, the key not revoked, still allowing
   * the line and still holding `permission`. One statement, each row found by its key.
   */
  async fileForHolder(
    attachmentId: string,
    holder: LinkHolder,
    permission: KeyPermission,
  ): Promise<{ filename: string; mime_type: string; content: Buffer | null } | undefined> {
    const [row] = await queryNamed<Array<{ filename: string; mime_type: string; content: Buffer | null }>>(
      this.dataSource.manager,
      `SELECT a.filename, a.mime_type, a.content
         FROM attachments a
         JOIN messages msg ON msg.id = a.message_id
         JOIN threads t ON t.id = msg.thread_id AND t.org_id = a.org_id
         JOIN lines l ON l.id = t.line_id
         JOIN users u ON u.id = :userId AND u.org_id = a.org_id
         JOIN line_memberships m ON m.line_id = l.id AND m.user_id = u.id
        WHERE a.id = :attachmentId AND ${liveLineOfUser('l', 'u')}
          AND (:keyId::uuid IS NULL OR EXISTS (
                SELECT 1 FROM api_keys k
                 WHERE k.id = :keyId::uuid AND k.user_id = u.id AND :permission = ANY (k.permissions) AND ${keyAllowsLine('k', 'l')})
               -- an OAuth grant acts as a key (oauth/; its id a UUID of version 8, never a key's)
               OR EXISTS (
                SELECT 1 FROM oauth_grants g
                 WHERE g.id = :keyId::uuid AND g.user_id = u.id AND :permission = ANY (g.permissions) AND ${keyAllowsLine('g', 'l')}))`,
      { attachmentId, userId: holder.userId, keyId: holder.keyId, permission },
    );
    return row;
  }

  /** For the extraction job, before its claim: the org of a still pending attachment (undefined when there is nothing to claim). */
  async orgOfPending(attachmentId: string): Promise<string | undefined> {
    const [row] = await queryNamed<Array<{ org_id: string }>>(
      this.dataSource.manager,
      `SELECT org_id FROM attachments WHERE id = :attachmentId AND extraction_status = 'pending'`,
      { attachmentId },
    );
    return row?.org_id;
  }

  /** For the extraction job: claims a pending attachment (pending → extracting); its file, or undefined when there was nothing to claim. */
  async claim(attachmentId: string): Promise<ClaimedFileRow | undefined> {
    // UPDATE ... RETURNING answers [rows, affected count].
    const [[file]] = await queryNamed<[ClaimedFileRow[], number]>(
      this.dataSource.manager,
      `UPDATE attachments SET extraction_status = 'extracting', extraction_started_at = now()
        WHERE id = :attachmentId AND extraction_status = 'pending'
        RETURNING filename, mime_type, size_bytes, content`,
      { attachmentId },
    );
    return file;
  }

  /** For the sweep: attachments still pending after `afterMs` (their job was lost), oldest first. */
  pendingOlderThan(afterMs: number): Promise<Array<{ id: string }>> {
    return queryNamed(
      this.dataSource.manager,
      `SELECT id FROM attachments WHERE extraction_status = 'pending' AND created_at < now() - make_interval(secs => :afterMs::float8 / 1000)
        ORDER BY created_at LIMIT 500`,
      { afterMs },
    );
  }

  /** For the sweep: claims older than `afterMs` (their process died), oldest first. */
  claimedBefore(afterMs: number): Promise<Array<{ id: string }>> {
    return queryNamed(
      this.dataSource.manager,
      `SELECT id FROM attachments WHERE extraction_status = 'extracting'
          AND extraction_started_at < now() - make_interval(secs => :afterMs::float8 / 1000)
        ORDER BY extraction_started_at LIMIT 500`,
      { afterMs },
    );
  }

  /** Saves the outcome of a claimed attachment if it is still `extracting`; undefined when someone else finished it. */
  async finish(manager: EntityManager, attachmentId: string, result: ExtractionResult): Promise<FinishedAttachmentRow | undefined> {
    // UPDATE ... RETURNING answers [rows, affected count].
    const [[row]] = await queryNamed<[FinishedAttachmentRow[], number]>(
      manager,
      `UPDATE attachments a
            SET extraction_status = :status, extracted_text = :text, text_length = :textLength, extraction_error = :error, extracted_at = now()
           FROM messages m
          WHERE a.id = :attachmentId AND a.extraction_status = 'extracting' AND m.id = a.message_id
         RETURNING a.id, a.filename, a.mime_type, a.size_bytes, a.message_id, a.extraction_status, a.text_length, a.extracted_at, a.extraction_error,
                   m.org_id, m.line_id`,
      { attachmentId, status: result.status, text: result.text, textLength: result.textLength, error: result.error },
    );
    return row;
  }

  /** Stores a calendar event of the attachment; answers its id. */
  async insertCalendarEvent(manager: EntityManager, attachmentId: string, e: ParsedCalendarEvent): Promise<string> {
    const [row] = await queryNamed<Array<{ id: string }>>(
      manager,
      `INSERT INTO calendar_events (attachment_id, uid, method, status, summary, starts_at, ends_at, organizer_email, attendee_emails)
         VALUES (:attachmentId, :uid, :method, :status, :summary, :startsAt, :endsAt, :organizerEmail, :attendeeEmails) RETURNING id`,
      {
        attachmentId,
        uid: e.uid,
        method: e.method,
        status: e.status,
        summary: e.summary,
        startsAt: e.startsAt,
        endsAt: e.endsAt,
        organizerEmail: e.organizerEmail,
        attendeeEmails: e.attendeeEmails,
      },
    );
    return row.id;
  }
}
