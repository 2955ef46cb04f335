import { Controller, Get, Query, Req, Res, UseFilters } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Request, Response } from 'express';
import { CurrentPrincipal, SessionAuth } from '../../identity/auth.decorators';
import { Person } from '../../identity/principal';
import { ValidationError } from '../../common/errors';
import { eventStreamOf } from '../../common/event-stream';
import { isUuid } from '../../common/uuid';
import { LiveStreams } from '../../live/live-streams';
import { PageErrorFilter } from '../kit/page-error.filter';

/**
 * `GET /live/events` (docs/web.md, "Live updates"): a server-sent event stream of what changes the
 * person's conversations, for `/static/app.js`. Every rule is LiveStreams'; this turns the
 * response into its sink. A refusal (no session, a bad threadId, too many streams) is answered
 * before the stream starts, as a page.
 */
@ApiExcludeController()
@UseFilters(PageErrorFilter)
@SessionAuth()
@Controller('live')
export class LiveController {
  constructor(private readonly live: LiveStreams) {}

  @Get('events')
  async events(@CurrentPrincipal() person: Person, @Query('threadId') threadId: unknown, @Req() request: Request, @Res() response: Response): Promise<void> {
    if (threadId !== undefined && !isUuid(threadId)) {
      throw new ValidationError('threadId must be the id of a thread (a UUID)', 'threadId');
    }
    await this.live.open(
      { userId: person.userId, orgId: person.orgId, sessionId: person.sessionId },
      (threadId as string | undefined) ?? null,
      eventStreamOf(request, response),
    );
  }
}
