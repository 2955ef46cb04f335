import { Body, Controller, Get, Param, Post, Query, Res, UseFilters } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Response } from 'express';
import { CurrentPrincipal, KeyAction, SessionAuth } from '../../identity/auth.decorators';
import { Person } from '../../identity/principal';
import { PersonApiKeysService, PersonApiKeyView } from '../../auth/person-api-keys.service';
import { ForbiddenError, NotFoundError } from '../../common/errors';
import { ReadsBody } from '../../common/request-body';

import { FORM_LIMIT, formAction } from '../kit/form-action';
import { noticeText, SETTINGS_NOTICE_KEY, withNotice } from '../kit/notices';
import { accessErrors, accessFields, accessOf, choiceOf, choiceOfAccess, Form, permissionsOf } from '../components/access-form';
import { ApiKeyCreatedPage } from './api-key-created.page';
import { ApiKeyProblemPage } from './api-key-problem.page';
import { ApiKeysListPage } from './api-keys-list.page';
import { EditApiKeyPage, NewApiKeyPage } from './api-key-form.page';
import { NOTICES } from './api-keys.notices';
import { RevokeApiKeyPage } from './api-key-revoke.page';
import { PageErrorFilter } from '../kit/page-error.filter';
import { seeOther, sendPage } from '../kit/render';

const BASE = '/settings/api-keys';
const KEY_FIELDS = accessFields('key');

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
  async list(@CurrentPrincipal() person: Person, @Query(SETTINGS_NOTICE_KEY) notice: unknown, @Res() response: Response): Promise<void> {
    const keys = await this.keys.listFor(person);
    sendPage(response, 200, <ApiKeysListPage person={person} keys={keys} notice={noticeText(NOTICES, notice)} />);
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
    await formAction(response, {
      read: () => ({ name: form?.name ?? '', choice: choiceOf(form), permissions: permissionsOf(form) }),
      run: async ({ name, choice, permissions }) => {
        const created = await this.keys.createFor(person, { name, channelAccess: accessOf(choice), permissions });
        return { status: 200, page: <ApiKeyCreatedPage person={person} secret={created.key} apiKey={created.apiKey} /> };
      },
      fields: KEY_FIELDS,
      again: ({ name, choice, permissions }, refusal) => (
        <NewApiKeyPage person={person} name={name} choice={choice} permissions={permissions} errors={accessErrors(refusal)} />
      ),
    });
  }

  @Get(':id/edit')
  async editForm(@CurrentPrincipal() person: Person, @Param('id') id: string, @Res() response: Response): Promise<void> {
    await this.answering(person, response, async () => {
      const apiKey = await this.visible(person, id, { mustBeMine: true });
      sendPage(
        response,
        200,
        <EditApiKeyPage person={person} apiKey={apiKey} choice={choiceOfAccess(apiKey.channelAccess)} permissions={apiKey.permissions} />,
      );
    });
  }

  @ReadsBody({ as: 'form', limit: FORM_LIMIT })
  @Post(':id/edit')
  async saveAccess(@CurrentPrincipal() person: Person, @Param('id') id: string, @Body() form: Form, @Res() response: Response): Promise<void> {
    await this.answering(person, response, () =>
      formAction(response, {
        read: () => ({ choice: choiceOf(form), permissions: permissionsOf(form) }),
        run: async ({ choice, permissions }) => {
          await this.keys.updateChannelAccessFor(person, id, accessOf(choice), permissions);
          return { redirect: withNotice(BASE, 'saved', SETTINGS_NOTICE_KEY) };
        },
        fields: KEY_FIELDS,
        again: async ({ choice, permissions }, refusal) => {
          const apiKey = await this.visible(person, id, { mustBeMine: true });
          return (
            <EditApiKeyPage person={person} apiKey={apiKey} choice={choice} permissions={permissions ?? apiKey.permissions} errors={accessErrors(refusal)} />
          );
        },
      }),
    );
  }

  @Get(':id/revoke')
  async revokeForm(@CurrentPrincipal() person: Person, @Param('id') id: string, @Res() response: Response): Promise<void> {
    await this.answering(person, response, async () => {
      const apiKey = await this.visible(person, id, { mustBeMine: false });
      sendPage(response, 200, <RevokeApiKeyPage person={person} apiKey={apiKey} />);
    });
  }

  @KeyAction('revokes-access')
  @ReadsBody({ as: 'form', limit: FORM_LIMIT })
  @Post(':id/revoke')
  async revoke(@CurrentPrincipal() person: Person, @Param('id') id: string, @Res() response: Response): Promise<void> {
    await this.answering(person, response, async () => {
      await this.keys.revokeFor(person, id);
      seeOther(response, withNotice(BASE, 'revoked', SETTINGS_NOTICE_KEY));
    });
  }

  /**
   * The key as the person sees it; NotFoundError (not visible, or not a key at all) or
   * ForbiddenError (another's key, to edit), which answering() shows as this page's own 404 / 403.
   * A malformed id is simply no key of theirs: no separate path-id check.
   */
  private async visible(person: Person, id: string, options: { mustBeMine: boolean }): Promise<PersonApiKeyView> {
    const apiKey = (await this.keys.listFor(person)).find((key) => key.id === id.toLowerCase());
    if (!apiKey) throw NotFoundError.of('api key', id, 'keyId');
    if (options.mustBeMine && !apiKey.mine) throw new ForbiddenError('only its owner may change its channel access', 'keyId');
    return apiKey;
  }

  /** Runs a route, answering a 404 or 403 from the service (or visible()) as a page in the layout; any other error goes on to the filter. */
  private async answering(person: Person, response: Response, route: () => Promise<void>): Promise<void> {
    try {
      await route();
    } catch (error) {
      if (!this.answeredProblem(person, error, response)) throw error;
    }
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
