import { Body, Controller, Get, Param, Post, Query, Res, UseFilters } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Response } from 'express';
import { CurrentPrincipal, KeyAction, SessionAuth } from '../../identity/auth.decorators';
import { Person } from '../../identity/principal';
import { PersonApiKeysService, PersonApiKeyView } from '../../auth/person-api-keys.service';
import { ForbiddenError, NotFoundError, ValidationError } from '../../common/errors';
import { ReadsBody } from '../../common/request-body';
import { accessOf, choiceOf, choiceOfAccess, Form, formErrorsOf, permissionsOf } from './access-form';
import { ApiKeyCreatedPage, ApiKeyProblemPage, ApiKeysListPage, EditApiKeyPage, NewApiKeyPage, NoticeKind, NOTICES, RevokeApiKeyPage } from './api-keys.pages';
import { PageErrorFilter } from './page-error.filter';
import { seeOther, sendPage } from './render';
import { FORM_LIMIT } from './sign-in.controller';

/**
 * Settings → API keys (docs/web.md): the person's keys (and, for an OWNER or ADMIN, the org's),
 * New key with the secret shown once, channel access of one's own keys, and revoking. Every rule
 * is PersonApiKeysService's; this only turns forms into its calls and its errors into pages.
 */
@ApiExcludeController()
@UseFilters(PageErrorFilter)
@SessionAuth()
@Controller('settings/api-keys')
export class ApiKeysController {
  constructor(private readonly keys: PersonApiKeysService) {}

  @Get()
  async list(@CurrentPrincipal() person: Person, @Query('notice') notice: unknown, @Res() response: Response): Promise<void> {
    const keys = await this.keys.listFor(person);
    const kind = typeof notice === 'string' && Object.hasOwn(NOTICES, notice) ? (notice as NoticeKind) : undefined;
    sendPage(response, 200, <ApiKeysListPage person={person} keys={keys} notice={kind} />);
  }

  @Get('new')
  newForm(@CurrentPrincipal() person: Person, @Res() response: Response): void {
    sendPage(response, 200, <NewApiKeyPage person={person} />);
  }

  /**
   * Creates the key and answers the page with its secret (200), the one time it is shown: the
   * secret is kept nowhere it could be shown from again, so this answer is not a redirect. The
   * page is `no-store`, and the secret never goes into a URL.
   */
  @ReadsBody({ as: 'form', limit: FORM_LIMIT })
  @Post()
  async create(@CurrentPrincipal() person: Person, @Body() form: Form, @Res() response: Response): Promise<void> {
    const name = form?.name ?? '';
    const choice = choiceOf(form);
    const permissions = permissionsOf(form);
    try {
      const created = await this.keys.createFor(person, { name, channelAccess: accessOf(choice), permissions });
      sendPage(response, 200, <ApiKeyCreatedPage person={person} secret={created.key} apiKey={created.apiKey} />);
    } catch (error) {
      const errors = error instanceof ValidationError ? formErrorsOf(error) : null;
      if (!errors) throw error;
      sendPage(response, 400, <NewApiKeyPage person={person} name={name} choice={choice} permissions={permissions} errors={errors} />);
    }
  }

  @Get(':id/edit')
  async editForm(@CurrentPrincipal() person: Person, @Param('id') id: string, @Res() response: Response): Promise<void> {
    const apiKey = await this.visible(person, id, response, { mustBeMine: true });
    if (!apiKey) return;
    sendPage(response, 200, <EditApiKeyPage person={person} apiKey={apiKey} choice={choiceOfAccess(apiKey.channelAccess)} permissions={apiKey.permissions} />);
  }

  @ReadsBody({ as: 'form', limit: FORM_LIMIT })
  @Post(':id/edit')
  async saveAccess(@CurrentPrincipal() person: Person, @Param('id') id: string, @Body() form: Form, @Res() response: Response): Promise<void> {
    const choice = choiceOf(form);
    const permissions = permissionsOf(form);
    try {
      await this.keys.updateChannelAccessFor(person, id, accessOf(choice), permissions);
      seeOther(response, '/settings/api-keys?notice=saved');
    } catch (error) {
      if (this.answeredProblem(person, error, response)) return;
      const errors = error instanceof ValidationError ? formErrorsOf(error) : null;
      if (!errors) throw error;
      const apiKey = await this.visible(person, id, response, { mustBeMine: true });
      if (!apiKey) return;
      sendPage(
        response,
        400,
        <EditApiKeyPage person={person} apiKey={apiKey} choice={choice} permissions={permissions ?? apiKey.permissions} errors={errors} />,
      );
    }
  }

  @Get(':id/revoke')
  async revokeForm(@CurrentPrincipal() person: Person, @Param('id') id: string, @Res() response: Response): Promise<void> {
    const apiKey = await this.visible(person, id, response, { mustBeMine: false });
    if (!apiKey) return;
    sendPage(response, 200, <RevokeApiKeyPage person={person} apiKey={apiKey} />);
  }

  @KeyAction('revokes-access')
  @ReadsBody({ as: 'form', limit: FORM_LIMIT })
  @Post(':id/revoke')
  async revoke(@CurrentPrincipal() person: Person, @Param('id') id: string, @Res() response: Response): Promise<void> {
    try {
      await this.keys.revokeFor(person, id);
    } catch (error) {
      if (this.answeredProblem(person, error, response)) return;
      throw error;
    }
    seeOther(response, '/settings/api-keys?notice=revoked');
  }

  /** The key as the person sees it, or a 404 page (not visible, or not a key at all) or 403 page (another's key, to edit); null once answered. */
  private async visible(person: Person, id: string, response: Response, options: { mustBeMine: boolean }): Promise<PersonApiKeyView | null> {
    const apiKey = (await this.keys.listFor(person)).find((key) => key.id === id.toLowerCase());
    if (!apiKey) {
      this.answeredProblem(person, NotFoundError.of('api key', id, 'keyId'), response);
      return null;
    }
    if (options.mustBeMine && !apiKey.mine) {
      this.answeredProblem(person, new ForbiddenError('only its owner may change its channel access', 'keyId'), response);
      return null;
    }
    return apiKey;
  }

  /** A 404 or 403 from the service as a page in the layout; false for any other error. */
  private answeredProblem(person: Person, error: unknown, response: Response): boolean {
    if (error instanceof NotFoundError) {
      sendPage(
        response,
        404,
        <ApiKeyProblemPage person={person} title="API key not found" message="There is no such key among the keys you can see. It may have been revoked." />,
      );
      return true;
    }
    if (error instanceof ForbiddenError && error.field === 'keyId') {
      sendPage(
        response,
        403,
        <ApiKeyProblemPage person={person} title="Not your key" message="Only a key's owner may change its channel access. You may revoke it instead." />,
      );
      return true;
    }
    return false;
  }
}
