import { Body, Controller, Get, Param, Post, Query, Res, UseFilters } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Response } from 'express';
import { CurrentPrincipal, KeyAction, SessionAuth } from '../../identity/auth.decorators';
import { Person } from '../../identity/principal';
import { NotFoundError } from '../../common/errors';
import { ReadsBody } from '../../common/request-body';

import { OAuthService } from '../../oauth/oauth.service';
import { FORM_LIMIT, formAction } from '../kit/form-action';
import { noticeText, SETTINGS_NOTICE_KEY, withNotice } from '../kit/notices';
import { accessErrors, accessFields, accessOf, choiceOf, choiceOfAccess, Form, permissionsOf } from '../components/access-form';
import { ConnectedAppNotFoundPage } from './connected-app-not-found.page';
import { ConnectedAppsListPage } from './connected-apps-list.page';
import { EditConnectedAppPage } from './connected-app-form.page';
import { NOTICES } from './connected-apps.notices';
import { RevokeConnectedAppPage } from './connected-app-revoke.page';
import { PageErrorFilter } from '../kit/page-error.filter';
import { seeOther, sendPage } from '../kit/render';

const BASE = '/settings/connected-apps';
const APP_FIELDS = accessFields('app');

/**
 * Settings → Connected apps (docs/web.md): the OAuth clients the person allowed on the MCP
 * endpoint (their grants), Change access and Revoke. Every rule is OAuthService's (which grants
 * are the person's, what an app may be given, what revoking ends); this only turns forms into its
 * calls and its answers into pages.
 */
@ApiExcludeController()
@UseFilters(PageErrorFilter)
@SessionAuth()
@Controller('settings/connected-apps')
export class ConnectedAppsController {
  constructor(private readonly oauth: OAuthService) {}

  @Get()
  async list(@CurrentPrincipal() person: Person, @Query(SETTINGS_NOTICE_KEY) notice: unknown, @Res() response: Response): Promise<void> {
    const grants = await this.oauth.listGrants(person.userId);
    sendPage(response, 200, <ConnectedAppsListPage person={person} grants={grants} mcpUrl={this.oauth.resource} notice={noticeText(NOTICES, notice)} />);
  }

  @Get(':id/edit')
  async editForm(@CurrentPrincipal() person: Person, @Param('id') id: string, @Res() response: Response): Promise<void> {
    try {
      const grant = await this.oauth.grantOf(person.userId, id);
      sendPage(
        response,
        200,
        <EditConnectedAppPage person={person} grant={grant} choice={choiceOfAccess(grant.channelAccess)} permissions={grant.permissions} />,
      );
    } catch (error) {
      this.notFound(person, error, response);
    }
  }

  /** Saves the app's channel access and permissions; a refused field is the form again (400) with what was chosen. */
  @ReadsBody({ as: 'form', limit: FORM_LIMIT })
  @Post(':id/edit')
  async saveAccess(@CurrentPrincipal() person: Person, @Param('id') id: string, @Body() form: Form, @Res() response: Response): Promise<void> {
    try {
      await formAction(response, {
        read: () => ({ choice: choiceOf(form), permissions: permissionsOf(form) }),
        run: async ({ choice, permissions }) => {
          await this.oauth.updateGrantAccess(person, id, { channelAccess: accessOf(choice), permissions });
          return { redirect: withNotice(BASE, 'saved', SETTINGS_NOTICE_KEY) };
        },
        fields: APP_FIELDS,
        again: async ({ choice, permissions }, refusal) => {
          const grant = await this.oauth.grantOf(person.userId, id);
          return (
            <EditConnectedAppPage person={person} grant={grant} choice={choice} permissions={permissions ?? grant.permissions} errors={accessErrors(refusal)} />
          );
        },
      });
    } catch (error) {
      this.notFound(person, error, response);
    }
  }

  @Get(':id/revoke')
  async revokeForm(@CurrentPrincipal() person: Person, @Param('id') id: string, @Res() response: Response): Promise<void> {
    try {
      sendPage(response, 200, <RevokeConnectedAppPage person={person} grant={await this.oauth.grantOf(person.userId, id)} />);
    } catch (error) {
      this.notFound(person, error, response);
    }
  }

  @KeyAction('revokes-access')
  @ReadsBody({ as: 'form', limit: FORM_LIMIT })
  @Post(':id/revoke')
  async revoke(@CurrentPrincipal() person: Person, @Param('id') id: string, @Res() response: Response): Promise<void> {
    try {
      await this.oauth.revokeGrant(person.userId, id);
    } catch (error) {
      return this.notFound(person, error, response);
    }
    seeOther(response, withNotice(BASE, 'revoked', SETTINGS_NOTICE_KEY));
  }

  /** A grant that is not the person's (or none): the one 404 page; any other error goes on to the filter. */
  private notFound(person: Person, error: unknown, response: Response): void {
    if (!(error instanceof NotFoundError)) throw error;
    sendPage(response, 404, <ConnectedAppNotFoundPage person={person} />);
  }
}
