import { ArgumentsHost, Catch, ExceptionFilter, HttpException, HttpStatus, Logger } from '@nestjs/common';
import { Request, Response } from 'express';
import { SignInRequiredError } from '../../identity/page-authenticator';
import { httpStatusOf } from '../../common/error-status';
import { DomainError, isDatabaseUnavailable, retryAfterOf } from '../../common/errors';
import { closeIfBodyUnread, RequestBodyError } from '../../common/request-body';
import { seeOther, sendPage } from './render';
import { ErrorPage } from '../components/error-page';

const TITLES: Record<number, string> = {
  400: 'The request could not be used',
  403: 'Not allowed',
  404: 'Not found',
  413: 'Too much data',
  415: 'Not accepted',
  422: 'The request could not be carried out',
  429: 'Too many requests',
  503: 'Try again shortly',
};

/**
 * Errors of page routes answered as pages, not JSON (docs/web.md): a GET without a valid session
 * goes to /sign-in (303); any other refusal is a page with its status (403 for a missing session
 * on a POST or a cross-site request, 429 with Retry-After, ...). Details of a 500 go to the log only.
 */
@Catch()
export class PageErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger(PageErrorFilter.name);

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const request = http.getRequest<Request>();
    const response = http.getResponse<Response>();
    if (response.headersSent) return;
    closeIfBodyUnread(request, response);
    if (exception instanceof SignInRequiredError && (request.method === 'GET' || request.method === 'HEAD')) return seeOther(response, '/sign-in');
    const { status, message } = this.describe(exception);
    const retryAfter = retryAfterOf(exception);
    if (retryAfter !== null) response.setHeader('Retry-After', String(retryAfter));
    if (exception instanceof RequestBodyError) for (const [name, value] of Object.entries(exception.headers)) response.setHeader(name, value);
    if (status === 503) response.setHeader('Retry-After', '5');
    sendPage(response, status, ErrorPage({ title: TITLES[status] ?? 'Something went wrong', message }));
  }

  private describe(exception: unknown): { status: number; message: string } {
    if (exception instanceof DomainError) return { status: httpStatusOf(exception), message: exception.message };
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      return { status, message: status >= 500 ? 'The service could not answer.' : exception.message };
    }
    if (isDatabaseUnavailable(exception)) return { status: HttpStatus.SERVICE_UNAVAILABLE, message: 'The service is busy. Try again in a few seconds.' };
    this.logger.error(exception instanceof Error ? (exception.stack ?? exception.message) : String(exception));
    return { status: HttpStatus.INTERNAL_SERVER_ERROR, message: 'Something went wrong on our side. Try again, and tell us if it keeps happening.' };
  }
}
