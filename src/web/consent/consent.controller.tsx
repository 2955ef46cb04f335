import { Body, Controller, Get, Post, Query, Req, Res, UseFilters } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Request, Response } from 'express';
import type { VNode } from 'preact';
import { CurrentPrincipal, Public, SessionAuth } from '../../identity/auth.decorators';
import { Person } from '../../identity/principal';
import { RateLimitPerIp } from '../../limits/ip-rate-limit.guard';
import { AuthorizationRequest, OAuthService } from '../../oauth/oauth.service';
import { ReadsBody } from '../../common/request-body';
import { WebSessionsService } from '../../auth/web-sessions/web-sessions.service';
import { FORM_LIMIT, formAction } from '../kit/form-action';
import { accessErrors, accessFields, accessOf, choiceOf, Form, permissionsOf } from '../components/access-form';
import { ConsentPage, REQUEST_FIELDS } from './consent.page';
import { PageErrorFilter } from '../kit/page-error.filter';
import { seeOther, sendPage } from '../kit/render';
import { returnToCookie } from '../kit/return-to';
import { ErrorPage } from '../components/error-page';

/**
 * The OAuth authorization endpoint as the person meets it (docs/mcp.md, "Connecting Claude,
 * ChatGPT and other OAuth clients"): the request is checked (OAuthService.checkRequest); a person
 * not signed in goes through sign-in and comes back here; the consent form posts back here with
 * the session's CSRF token, and the browser is sent to the client with a code, or with an error.
 */
@ApiExcludeController()
@UseFilters(PageErrorFilter)
@Controller('oauth/authorize')
export class ConsentController {
  constructor(
    private readonly oauth: OAuthService,
    private readonly sessions: WebSessionsService,
  ) {}

  /**
   * Public, and it may fetch a Client ID Metadata Document from the URL it is given: each client
   * address may open it OAUTH_AUTHORIZE_RATE_LIMIT times a window, so nobody can make the service
   * fetch public URLs at will. The request is checked before sign-in; why an app cannot be used is
   * told to a signed-in person only (OAuthService.checkRequest).
   */
  @Public()
  @RateLimitPerIp('oauthAuthorize')
  @Get()
  async page(@Req() request: Request, @Query() query: Record<string, unknown>, @Res() response: Response): Promise<void> {
    const token = this.sessions.cookie.read(request);
    const person = token === null ? null : await this.sessions.person(token);
    const check = await this.oauth.checkRequest(query, { signedIn: person !== null });
    if ('page' in check) return sendPage(response, 400, <ErrorPage title="This authorization request cannot be used" message={check.page} />);
    if ('redirect' in check) return found(response, check.redirect);
    if (!person) {
      response.setHeader('Set-Cookie', returnToCookie(request.originalUrl, this.sessions.cookie.name.startsWith('__Host-')));
      return seeOther(response, '/sign-in');
    }
    sendPage(response, 200, this.consentPage(response, person, check.ok, paramsOf(query)));
  }

  @SessionAuth()
  @ReadsBody({ as: 'form', limit: FORM_LIMIT })
  @Post()
  async decide(@CurrentPrincipal() person: Person, @Body() form: Form, @Res() response: Response): Promise<void> {
    const check = await this.oauth.checkRequest(form ?? {}, { signedIn: true });
    if ('page' in check) return sendPage(response, 400, <ErrorPage title="This authorization request cannot be used" message={check.page} />);
    if ('redirect' in check) return seeOther(response, check.redirect);
    if (form?.decision !== 'allow') return seeOther(response, this.oauth.deny(check.ok));
    const request = check.ok;
    await formAction(response, {
      read: () => ({ choice: choiceOf(form), permissions: permissionsOf(form) ?? [] }),
      run: async ({ choice, permissions }) => ({ redirect: await this.oauth.approve(person, request, { channelAccess: accessOf(choice), permissions }) }),
      fields: accessFields('app'),
      again: ({ choice, permissions }, refusal) => {
        const errors = accessErrors(refusal);
        return this.consentPage(response, person, request, paramsOf(form ?? {}), { choice, permissions, errors });
      },
    });
  }

  /** The consent page; its form may be sent on (303) to the client's redirect host, so CSP form-action admits that origin too. */
  private consentPage(
    response: Response,
    person: Person,
    request: AuthorizationRequest,
    params: Record<string, string | undefined>,
    again: Partial<Pick<Parameters<typeof ConsentPage>[0], 'choice' | 'permissions' | 'errors'>> = {},
  ): VNode {
    const csp = response.getHeader('Content-Security-Policy');
    if (typeof csp === 'string')
      response.setHeader('Content-Security-Policy', csp.replace("form-action 'self'", `form-action 'self' ${new URL(request.redirectUri).origin}`));
    return <ConsentPage person={person} request={request} params={params} {...again} />;
  }
}

/** A 302 to the client (an authorization response to a GET). */
function found(response: Response, location: string): void {
  response.status(302).setHeader('Location', location);
  response.end();
}

function paramsOf(source: Record<string, unknown>): Record<string, string | undefined> {
  return Object.fromEntries(REQUEST_FIELDS.map((field) => [field, typeof source[field] === 'string' ? (source[field] as string) : undefined]));
}
