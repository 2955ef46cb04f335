import { Controller, Delete, Get, Header, HttpCode, Param, Post } from '@nestjs/common';
import {
  ApiBearerAuth,
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiProperty,
  ApiTags,
} from '@nestjs/swagger';
import { AdminOnly } from '../identity/auth.decorators';
import { UuidParam } from '../common/uuid-param';
import { WebSessionsService } from '../auth/web-sessions/web-sessions.service';

class SignInLinkResponse {
  @ApiProperty({ example: 'https://app.example.com/sign-in/link?token=sil_...', description: 'Works once, for 15 minutes. Shown only now.' })
  url: string;

  @ApiProperty({ type: String, format: 'date-time' })
  expiresAt: Date;
}

class WebSessionResponse {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ type: String, format: 'date-time' }) createdAt: Date;
  @ApiProperty({ type: String, format: 'date-time', description: 'Updated at most once a minute.' }) lastSeenAt: Date;
  @ApiProperty({ type: String, format: 'date-time', description: 'The absolute end (SESSION_ABSOLUTE_TIMEOUT_HOURS after sign-in).' }) expiresAt: Date;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) revokedAt: Date | null;
  @ApiProperty({ description: 'Not revoked, and past neither the idle nor the absolute timeout.' }) active: boolean;
  @ApiProperty({ type: String, nullable: true }) userAgent: string | null;
  @ApiProperty({ type: String, nullable: true }) ip: string | null;
}

/** Web sign-in for people (docs/web.md): one-time sign-in links, and a user's sessions. */
@ApiTags('admin: web sessions')
@ApiBearerAuth()
@AdminOnly()
@Controller('admin/users/:userId')
export class AdminWebSessionsController {
  constructor(private readonly sessions: WebSessionsService) {}

  @Post('sign-in-links')
  @Header('Cache-Control', 'no-store') // the answer holds a secret, shown once
  @ApiOperation({ summary: 'Create a one-time sign-in link for the user (15 minutes, one use)' })
  @ApiCreatedResponse({ type: SignInLinkResponse })
  @ApiNotFoundResponse({ description: 'No such user (field: userId).' })
  createSignInLink(@Param('userId', UuidParam('userId')) userId: string): Promise<SignInLinkResponse> {
    return this.sessions.createLink(userId);
  }

  @Get('sessions')
  @ApiOperation({ summary: "List the user's web sessions, newest first (no tokens)" })
  @ApiOkResponse({ type: [WebSessionResponse] })
  @ApiNotFoundResponse({ description: 'No such user (field: userId).' })
  listSessions(@Param('userId', UuidParam('userId')) userId: string): Promise<WebSessionResponse[]> {
    return this.sessions.list(userId);
  }

  @Delete('sessions')
  @HttpCode(204)
  @ApiOperation({ summary: 'Revoke every web session of the user at once (they are signed out on their next request)' })
  @ApiNoContentResponse()
  @ApiNotFoundResponse({ description: 'No such user (field: userId).' })
  async revokeSessions(@Param('userId', UuidParam('userId')) userId: string): Promise<void> {
    await this.sessions.revokeAll(userId);
  }
}
