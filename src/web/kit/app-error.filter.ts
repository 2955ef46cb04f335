import { ArgumentsHost, Catch, Inject, NotFoundException } from '@nestjs/common';
import { Request, Response } from 'express';
import { HttpErrorFilter } from '../../common/http-error.filter';
import { AppConfig } from '../../config/app-config';
import { APP_CONFIG } from '../../config/config.module';
import { pageHeaders } from './page-headers';
import { sendPage } from './render';
import { ErrorPage } from '../components/error-page';

/**
 * The app's error filter: HttpErrorFilter's JSON answers, except that a path no route matches,
 * typed into a browser (a GET or HEAD that prefers text/html to JSON), gets the 404 page. An API
 * client (Accept: application/json, or curl's any type) still gets the JSON 404.
 */
@Catch()
export class AppErrorFilter extends HttpErrorFilter {
  /** The 404 page has every page's headers (its CSP among them). */
  private readonly headers: ReturnType<typeof pageHeaders>;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    super();
    this.headers = pageHeaders(config.publicBaseUrl);
  }

  override catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const request = http.getRequest<Request>();
    const response = http.getResponse<Response>();
    if (isUnknownPath(exception, request) && wantsPage(request) && !response.headersSent) {
      this.headers(request, response, () =>
        sendPage(response, 404, ErrorPage({ title: 'Not found', message: 'There is no page at this address. Check it, or start again from the link below.' })),
      );
      return;
    }
    super.catch(exception, host);
  }
}

/**
 * Nest's answer to a path no route matched: its not-found handler throws this exception with this
 * message (the service's own 404s are NotFoundError, a DomainError). `request.route` cannot tell:
 * a wildcard middleware route may have matched before.
 */
function isUnknownPath(exception: unknown, request: Request): boolean {
  return exception instanceof NotFoundException && exception.message === `Cannot ${request.method} ${request.originalUrl}`;
}

function wantsPage(request: Request): boolean {
  return (request.method === 'GET' || request.method === 'HEAD') && request.accepts(['application/json', 'text/html']) === 'text/html';
}
