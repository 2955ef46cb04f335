import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiBadRequestResponse, ApiBearerAuth, ApiOkResponse, ApiOperation, ApiProperty, ApiQuery, ApiTags } from '@nestjs/swagger';
import { AUDIT_ACTOR_KINDS, AUDIT_OUTCOMES, AUDIT_SURFACES, AuditActorKind, AuditOutcome, AuditSurface } from '../audit/audit-event.entity';
import { auditFilterOf, AuditEvents, AuditEventView } from '../audit/audit-events.service';
import { UuidParam } from '../common/uuid-param';
import { AdminOnly } from '../identity/auth.decorators';

class AuditEventResponse {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ type: String, format: 'date-time' }) at: Date;
  @ApiProperty({ enum: AUDIT_ACTOR_KINDS }) actorKind: AuditActorKind;
  @ApiProperty({ type: String, format: 'uuid', nullable: true, description: 'The API key or OAuth grant; null for a person on a page and the admin token' })
  credentialId: string | null;
  @ApiProperty({ type: String, format: 'uuid', nullable: true, description: 'The person acted for; null for the admin token' }) userId: string | null;
  @ApiProperty({ example: 'send_sms', description: 'The MCP tool, or the route: `POST /api/agents/:agentId/turns`' }) action: string;
  @ApiProperty({ enum: AUDIT_SURFACES }) surface: AuditSurface;
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    example: { threadId: '…', messageId: '…' },
    description: 'Ids named in the arguments and the result',
  })
  targets: Record<string, string | string[]>;
  @ApiProperty({ enum: AUDIT_OUTCOMES }) outcome: AuditOutcome;
  @ApiProperty({ type: String, nullable: true, example: 'SEND_REFUSED' }) errorCode: string | null;
  @ApiProperty({ type: String, nullable: true, example: 'rule: own_line', description: 'A short note; never a secret nor a message text' }) detail:
    string | null;
}

class AuditEventsPageResponse {
  @ApiProperty({ type: [AuditEventResponse] }) events: AuditEventResponse[];
  @ApiProperty({ type: String, nullable: true, description: 'Pass as `cursor` for the next (older) page; null on the last' }) nextCursor: string | null;
}

/** The audit trail of an org (docs/decisions.md, "The audit trail"): every changing call, newest first. */
@ApiTags('admin: audit trail')
@ApiBearerAuth()
@AdminOnly()
@Controller('admin/orgs/:orgId/audit-events')
export class AdminAuditEventsController {
  constructor(private readonly audit: AuditEvents) {}

  @Get()
  @ApiOperation({ summary: "List the org's audit trail, newest first, 50 a page (keyset cursor); filter by credential and time" })
  @ApiQuery({ name: 'credentialId', required: false, description: 'Only the calls of this API key or OAuth grant' })
  @ApiQuery({ name: 'since', required: false, description: 'ISO 8601: calls at or after' })
  @ApiQuery({ name: 'until', required: false, description: 'ISO 8601: calls before' })
  @ApiQuery({ name: 'cursor', required: false, description: 'nextCursor of the previous page (with the same filters)' })
  @ApiOkResponse({ type: AuditEventsPageResponse })
  @ApiBadRequestResponse({ description: 'orgId is not a UUID, or a filter is malformed (the field is named).' })
  list(
    @Param('orgId', UuidParam('orgId')) orgId: string,
    @Query() query: Record<string, unknown>,
  ): Promise<{ events: AuditEventView[]; nextCursor: string | null }> {
    return this.audit.list(orgId, auditFilterOf(query));
  }
}
