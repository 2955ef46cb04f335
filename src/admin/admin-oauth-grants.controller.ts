import { Controller, Delete, Get, HttpCode, Param } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiBearerAuth,
  ApiNoContentResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiProperty,
  ApiPropertyOptional,
  ApiTags,
} from '@nestjs/swagger';
import { KEY_PERMISSIONS, KeyPermission } from '../identity/key-permissions';
import { AdminOnly } from '../identity/auth.decorators';
import { UuidParam } from '../common/uuid-param';
import { GrantView, OAuthService } from '../oauth/oauth.service';

class OAuthClientResponse {
  @ApiProperty({ description: 'The client_id it registered with' }) id: string;
  @ApiProperty({ type: String, nullable: true, description: 'client_name from its registration' }) name: string | null;
  @ApiProperty({ example: 'claude.ai', description: 'The host of the redirect URI the person consented to' }) redirectHost: string;
  @ApiProperty({ enum: ['self-registered'], description: 'How its identity was established: Dynamic Client Registration (RFC 7591)' })
  registration: 'self-registered';
}

class GrantLineResponse {
  @ApiProperty({ format: 'uuid', nullable: true, type: String, description: "The org's live line at the address; null when none (it grants nothing)" })
  id: string | null;
  @ApiProperty() address: string;
}

class GrantChannelAccessResponse {
  @ApiProperty({ enum: ['ALL', 'LINES'] }) mode: 'ALL' | 'LINES';
  @ApiPropertyOptional({ type: [GrantLineResponse], description: 'Only for LINES' }) lines?: GrantLineResponse[];
}

class OAuthGrantResponse {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'uuid' }) userId: string;
  @ApiProperty({ type: OAuthClientResponse }) client: OAuthClientResponse;
  @ApiProperty({ type: GrantChannelAccessResponse }) channelAccess: GrantChannelAccessResponse;
  @ApiProperty({ enum: KEY_PERMISSIONS, isArray: true }) permissions: KeyPermission[];
  @ApiProperty({ enum: KEY_PERMISSIONS, isArray: true, description: 'The scope the app asked for when it was connected: permissions never hold more' })
  requestedScopes: KeyPermission[];
  @ApiProperty({ type: String, format: 'date-time' }) createdAt: Date;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'Updated at most once a minute.' }) lastUsedAt: Date | null;
}

/** OAuth grants: the apps a person connected to the MCP endpoint (docs/mcp.md, "Connecting Claude, ChatGPT and other OAuth clients"). */
@ApiTags('admin: oauth grants')
@ApiBearerAuth()
@AdminOnly()
@Controller('admin')
export class AdminOAuthGrantsController {
  constructor(private readonly oauth: OAuthService) {}

  @Get('users/:userId/oauth-grants')
  @ApiOperation({ summary: "List the user's OAuth grants (connected apps), newest first; no tokens" })
  @ApiOkResponse({ type: [OAuthGrantResponse] })
  @ApiBadRequestResponse({ description: 'userId is not a UUID.' })
  @ApiNotFoundResponse({ description: 'No such user (field: userId).' })
  list(@Param('userId', UuidParam('userId')) userId: string): Promise<GrantView[]> {
    return this.oauth.listGrantsOfUser(userId);
  }

  @Delete('oauth-grants/:grantId')
  @HttpCode(204)
  @ApiOperation({ summary: 'Revoke a grant: its access token gets 401 and its refresh token invalid_grant from the next request' })
  @ApiNoContentResponse()
  @ApiBadRequestResponse({ description: 'grantId is not a UUID.' })
  @ApiNotFoundResponse({ description: 'No such grant (field: grantId).' })
  async revoke(@Param('grantId', UuidParam('grantId')) grantId: string): Promise<void> {
    await this.oauth.revokeAnyGrant(grantId);
  }
}
