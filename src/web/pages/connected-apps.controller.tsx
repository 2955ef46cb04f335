import { Controller, Get, Param, Post, Query, Res, UseFilters } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Response } from 'express';
import { CurrentPerson, SessionAuth } from '../../auth/auth.decorators';
import { Person } from '../../auth/person';
import { NotFoundError } from '../../common/errors';
import { ReadsBody } from '../../common/request-body';
import { RevokesAccess } from '../../limits/session-action.guard';
import { OAuthService } from '../../oauth/oauth.service';
import { ConnectedAppNotFoundPage, ConnectedAppsListPage, NOTICES, NoticeKind, RevokeConnectedAppPage } from './connected-apps.pages';
import { PageErrorFilter } from './page-error.filter';
import { seeOther, sendPage } from './render';
import { FORM_LIMIT } from './sign-in.controller';

/**
 * Settings → Connected apps (docs/web.md): the OAuth clients the person allowed on the MCP
 * endpoint (their grants), and Revoke. Every rule is OAuthService's (which grants are the
 * person's, what revoking ends); this only turns its answers into pages.
 */
@ApiExcludeController()
@UseFilters(PageErrorFilter)
@SessionAuth()
@Controller('settings/connected-apps')
export class ConnectedAppsController {
  constructor(private readonly oauth: OAuthService) {}

  @Get()
  async list(@CurrentPerson() person: Person, @Query('notice') notice: unknown, @Res() response: Response): Promise<void> {
    const grants = await this.oauth.listGrants(person.userId);
    const kind = typeof notice === 'string' && Object.hasOwn(NOTICES, notice) ? (notice as NoticeKind) : undefined;
    sendPage(response, 200, <ConnectedAppsListPage person={person} grants={grants} mcpUrl={this.oauth.resource} notice={kind} />);
  }

  @Get(':id/revoke')
  async revokeForm(@CurrentPerson() person: Person, @Param('id') id: string, @Res() response: Response): Promise<void> {
    const grant = (await this.oauth.listGrants(person.userId)).find((g) => g.id === id.toLowerCase());
    if (!grant) return sendPage(response, 404, <ConnectedAppNotFoundPage person={person} />);
    sendPage(response, 200, <RevokeConnectedAppPage person={person} grant={grant} />);
  }

  @RevokesAccess()
  @ReadsBody({ as: 'form', limit: FORM_LIMIT })
  @Post(':id/revoke')
  async revoke(@CurrentPerson() person: Person, @Param('id') id: string, @Res() response: Response): Promise<void> {
    try {
      await this.oauth.revokeGrant(person.userId, id);
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
      return sendPage(response, 404, <ConnectedAppNotFoundPage person={person} />);
    }
    seeOther(response, '/settings/connected-apps?notice=revoked');
  }
}
