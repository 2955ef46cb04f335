import { Caller } from '../../auth/caller';
import { McpTool, McpToolHandler, ToolArgs } from '../../mcp/mcp-tool.decorator';
import { AttachmentReadResult, AttachmentsService } from './attachments.service';

import { nullable, nullableString } from '../../mcp/common-schemas';

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
  },
  required: ['attachmentId'],
  additionalProperties: false,
} as const;

@McpTool({
  name: 'read_attachment',
  title: 'Read an attachment',
  description:
    'The text extracted from an attachment of a message (PDF text, image OCR, Word/Excel/PowerPoint, text, HTML, .ics invites), ' +
    'its calendar events for .ics files, and a download link valid 1 hour. Extraction runs once, after message.received; ' +
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
      text: nullable({ type: 'string' } as const, 'The extracted text (at most 1,000,000 characters); null until extraction finishes, or if it failed.'),
      calendarEvents: { type: 'array', items: calendarEventSchema },
      downloadUrl: { type: 'string', description: 'Signed link to the file, valid 1 hour.' },
      downloadUrlExpiresAt: { type: 'string' },
      note: nullableString,
    },
    required: ['attachment', 'text', 'calendarEvents', 'downloadUrl', 'downloadUrlExpiresAt', 'note'],
  },
})
export class ReadAttachmentTool implements McpToolHandler<ToolArgs<typeof readAttachmentInput>, AttachmentReadResult> {
  constructor(private readonly attachments: AttachmentsService) {}

  execute(args: ToolArgs<typeof readAttachmentInput>, caller: Caller) {
    return this.attachments.read(caller, args.attachmentId);
  }
}
