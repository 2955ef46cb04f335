import { Body, Controller, Get, Post, Query, Req, Res, UseFilters } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Request, Response } from 'express';
import { Public, SameOriginForm } from '../../identity/auth.decorators';
import { CSRF_REFUSED, csrfTokenMatches } from '../../identity/csrf-token.guard';
import { CrossSiteRequestError } from '../../identity/page-authenticator';
import { isEmailAddress } from '../../common/email-address';
import { RateLimitedError } from '../../common/errors';
import { ReadsBody } from '../../common/request-body';
import { SignInRequests } from '../../auth/web-sessions/sign-in-requests.service';
import { WebSessionsService } from '../../auth/web-sessions/web-sessions.service';
import { PageErrorFilter } from '../kit/page-error.filter';
import { seeOther, sendPage } from '../kit/render';
import { FORM_LIMIT } from '../kit/form-action';
import { clearReturnTo, returnTo } from '../kit/return-to';
import { LinkProblemPage, SignInLinkPage } from './sign-in-link.page';
import { SignInPage, SignInSentPage } from './sign-in.page';

/** Where a person lands after signing in. */
const START_PAGE = '/conversations';

type Form = Record<string, string | undefined> | undefined;

/** Sign-in by emailed link, and sign-out (docs/web.md). */
@ApiExcludeController()
@UseFilters(PageErrorFilter)
@Controller()
export class SignInController {
  constructor(
    private readonly sessions: WebSessionsService,
    private readonly requests: SignInRequests,
  ) {}

  @Public()
  @Get()
  async home(@Req() request: Request, @Res() response: Response): Promise<void> {
    seeOther(response, (await this.signedIn(request)) ? START_PAGE : '/sign-in');
  }

  /** A person already signed in goes on to the app rather than being asked to sign in again. */
  @Public()
  @Get('sign-in')
  async signInForm(@Req() request: Request, @Res() response: Response): Promise<void> {
    if (await this.signedIn(request)) return seeOther(response, START_PAGE);
    sendPage(response, 200, <SignInPage />);
  }

  @SameOriginForm()
  @ReadsBody({ as: 'form', limit: FORM_LIMIT, unauthenticated: true })
  @Post('sign-in')
  async requestLink(@Req() request: Request, @Res() response: Response, @Body() form: Form): Promise<void> {
    const email = (form?.email ?? '').trim();
    if (!isEmailAddress(email)) return sendPage(response, 400, <SignInPage email={email} error="Enter your email address, such as name@example.com." />);
    try {
      await this.requests.request(email, request.ip);
    } catch (error) {
      if (!(error instanceof RateLimitedError)) throw error;
      response.setHeader('Retry-After', String(error.retryAfterSeconds));
      const minutes = Math.ceil(error.retryAfterSeconds / 60);
      return sendPage(
        response,
        429,
        <SignInPage email={email} error={`Too many sign-in links were asked for. Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`} />,
      );
    }
    sendPage(response, 200, <SignInSentPage />);
  }

  @Public()
  @Get('sign-in/link')
  async linkPage(@Query('token') token: unknown, @Res() response: Response): Promise<void> {
    const text = typeof token === 'string' ? token : '';
    const problem = await this.sessions.linkProblem(text);
    if (problem) return sendPage(response, problem === 'invalid' ? 400 : 410, <LinkProblemPage problem={problem} />);
    sendPage(response, 200, <SignInLinkPage token={text} />);
  }

  @SameOriginForm()
  @ReadsBody({ as: 'form', limit: FORM_LIMIT, unauthenticated: true })
  @Post('sign-in/link')
  async useLink(@Req() request: Request, @Res() response: Response, @Body() form: Form): Promise<void> {
    const outcome = await this.sessions.signIn(
      form?.token ?? '',
      { userAgent: request.headers['user-agent'] ?? null, ip: request.ip ?? null },
      this.sessions.cookie.read(request),
    );
    if ('problem' in outcome) return sendPage(response, outcome.problem === 'invalid' ? 400 : 410, <LinkProblemPage problem={outcome.problem} />);
    // Back to an OAuth authorization request the person was asked to sign in for (consent.controller.tsx).
    const back = returnTo(request);
    const secure = this.sessions.cookie.name.startsWith('__Host-');
    response.setHeader('Set-Cookie', [this.sessions.cookie.set(outcome.sessionToken, outcome.maxAgeSeconds), ...(back ? [clearReturnTo(secure)] : [])]);
    seeOther(response, back ?? START_PAGE);
  }

  /**
   * Ends the session and clears the cookie. A same-origin form only (no session needed): with a
   * live session its `_csrf` must match; with a session that already ended (idle, expired,
   * revoked elsewhere) the dead cookie is cleared all the same, instead of a 403 that left it.
   */
  @SameOriginForm()
  @ReadsBody({ as: 'form', limit: FORM_LIMIT, unauthenticated: true })
  @Post('sign-out')
  async signOut(@Req() request: Request, @Body() form: Form, @Res() response: Response): Promise<void> {
    const token = this.sessions.cookie.read(request);
    const person = token === null ? null : await this.sessions.person(token);
    if (person) {
      if (!csrfTokenMatches(form?._csrf, person.csrfToken)) {
        throw new CrossSiteRequestError(CSRF_REFUSED);
      }
      await this.sessions.signOut(person.sessionId);
    }
    response.setHeader('Set-Cookie', this.sessions.cookie.clear());
    seeOther(response, '/sign-in');
  }

  private async signedIn(request: Request): Promise<boolean> {
    const token = this.sessions.cookie.read(request);
    return token !== null && (await this.sessions.person(token)) !== null;
  }
}
