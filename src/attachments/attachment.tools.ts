import { Principal } from '../identity/principal';
import { McpTool, McpToolHandler, ToolArgs } from '../tools/tool.decorator';
import { AttachmentReadResult, AttachmentsService } from './attachments.service';
import { RESULT_BOUNDS, textWindowArguments } from '../common/result-bounds';

import { nullable, nullableString } from '../tools/tool-schemas';

export const calendarEventSchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    uid: { type: 'string' },
    method: nullableString,
    status: nullableString,
    summary: nullableString,
    startsAt: nullableString,
    endsAt: nullableString,
    organizerEmail: nullableString,
    attendeeEmails: { type: 'array', items: { type: 'string' } },
  },
  required: ['id', 'uid', 'method', 'status', 'summary', 'startsAt', 'endsAt', 'organizerEmail', 'attendeeEmails'],
} as const;

const readAttachmentInput = {
  type: 'object',
  properties: {
    attachmentId: { type: 'string', format: 'uuid', description: 'From message.received / attachment.extracted or get_thread.' },
    ...textWindowArguments('extracted text', RESULT_BOUNDS.attachmentChars, RESULT_BOUNDS.maxAttachmentChars),
  },
  required: ['attachmentId'],
  additionalProperties: false,
} as const;

@McpTool({
  name: 'read_attachment',
  title: 'Read an attachment',
  description:
    'The text extracted from an attachment of a message (PDF text, image OCR, Word/Excel/PowerPoint, text, HTML, .ics invites), ' +
    `its calendar events for .ics files, and a download link valid 1 hour. The text comes ${RESULT_BOUNDS.attachmentChars} characters ` +
    'at a time (maxChars to change it): pass nextOffset as offset for the rest; nextOffset is null at the end. ' +
    'Extraction runs once, after message.received; ' +
    'until it finishes (attachment.extracted), extractionStatus is pending or extracting, text is null and `note` says so. ' +
    "A file that arrived when the organization's attachment storage quota was reached was not stored: that is an error saying so.",
  kind: 'read',
  idempotent: true,
  minRole: 'MEMBER',
  inputSchema: readAttachmentInput,
  outputSchema: {
    type: 'object',
    properties: {
      attachment: {
        type: 'object',
        properties: {
          id: { type: 'string' },
          filename: { type: 'string' },
          mimeType: { type: 'string' },
          sizeBytes: { type: 'integer' },
          messageId: { type: 'string' },
          extractionStatus: { type: 'string', enum: ['pending', 'extracting', 'extracted', 'failed'] },
          textLength: { type: 'integer', description: 'Characters (Unicode code points) of extracted text.' },
          hasText: { type: 'boolean' },
          extractedAt: nullableString,
          extractionError: nullableString,
        },
        required: ['id', 'filename', 'mimeType', 'sizeBytes', 'messageId', 'extractionStatus', 'textLength', 'hasText', 'extractedAt', 'extractionError'],
      },
      text: nullable(
        { type: 'string' } as const,
        'The extracted text from offset, at most maxChars characters (of up to 1,000,000 stored); null until extraction finishes, or if it failed.',
      ),
      nextOffset: nullable({ type: 'integer' } as const, 'The offset of the next call for more text; null when this call reached the end.'),
      calendarEvents: {
        type: 'array',
        items: calendarEventSchema,
        description: `The first ${RESULT_BOUNDS.calendarEvents} events by start, each with at most ${RESULT_BOUNDS.attendeesPerEvent} attendees; text lists every event.`,
      },
      calendarEventCount: { type: 'integer', description: 'How many events the file has.' },
      downloadUrl: { type: 'string', description: 'Signed link to the file, valid 1 hour.' },
      downloadUrlExpiresAt: { type: 'string' },
      note: nullableString,
    },
    required: ['attachment', 'text', 'nextOffset', 'calendarEvents', 'calendarEventCount', 'downloadUrl', 'downloadUrlExpiresAt', 'note'],
  },
})
export class ReadAttachmentTool implements McpToolHandler<ToolArgs<typeof readAttachmentInput>, AttachmentReadResult> {
  constructor(private readonly attachments: AttachmentsService) {}

  execute(args: ToolArgs<typeof readAttachmentInput>, caller: Principal) {
    const { attachmentId, ...window } = args;
    return this.attachments.read(caller, attachmentId, window);
  }
}
