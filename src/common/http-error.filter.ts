import { ArgumentsHost, Catch, ExceptionFilter, HttpException, HttpStatus, Logger } from '@nestjs/common';
import { Request, Response } from 'express';
import { httpStatusOf } from './error-status';
import { DomainError, isDatabaseUnavailable, retryAfterOf, ResourceChallenge, UnauthorizedError } from './errors';
import { closeIfBodyUnread, RequestBodyError } from './request-body';

export interface HttpErrorBody {
  statusCode: number;
  error: string;
  message: string;
  field?: string;
}

/**
 * The RFC 6750 challenge every 401 carries; `error="invalid_token"` only when credentials were
 * sent; on the MCP endpoint also `resource_metadata` (RFC 9728), where OAuth clients start.
 */
export function bearerChallenge(credentialsSent: boolean, resource?: ResourceChallenge): string {
  const named = resource ? `, resource_metadata="${resource.resourceMetadata}", scope="${resource.scope}"` : '';
  return `Bearer realm="messaging-sync"${credentialsSent ? ', error="invalid_token"' : ''}${named}`;
}

/** Seconds a client is told to wait (Retry-After) when the database cannot be reached. */
const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

/**
 * The one place REST routes turn errors into answers: domain errors by their code, Nest's HTTP
 * exceptions as they are, an unreachable database as a 503 with Retry-After (the request may be
 * repeated), anything else as a 500 whose details go to the log only. An answer given before the
 * request body arrived (a 401, say) closes the connection rather than drain the body.
 */
@Catch()
export class HttpErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger(HttpErrorFilter.name);

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    this.answer(http.getRequest<Request>(), http.getResponse<Response>(), exception);
  }

  /** Also used by the few HTTP surfaces outside Nest's router (the admin OpenAPI docs). */
  answer(request: Request, response: Response, exception: unknown): void {
    const { status, body } = this.toAnswer(exception);
    if (response.headersSent) return;
    if (status === HttpStatus.UNAUTHORIZED) {
      const unauthorized = exception instanceof UnauthorizedError ? exception : undefined;
      response.setHeader('WWW-Authenticate', bearerChallenge(unauthorized?.credentialsSent ?? true, unauthorized?.resource));
    }
    if (status === HttpStatus.SERVICE_UNAVAILABLE) response.setHeader('Retry-After', String(UNAVAILABLE_RETRY_AFTER_SECONDS));
    const retryAfter = retryAfterOf(exception);
    if (retryAfter !== null) response.setHeader('Retry-After', String(retryAfter));
    if (exception instanceof RequestBodyError) for (const [name, value] of Object.entries(exception.headers)) response.setHeader(name, value);
    closeIfBodyUnread(request, response);
    response.status(status).json(this.shape(body));
  }

  /** The body of the answer; a surface with its own error format (JSON-RPC) overrides this. */
  protected shape(body: HttpErrorBody): object {
    return body;
  }

  private toAnswer(exception: unknown): { status: number; body: HttpErrorBody } {
    if (exception instanceof DomainError) {
      const status = httpStatusOf(exception);
      return { status, body: { statusCode: status, error: reason(status), message: exception.message, field: exception.field } };
    }
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      const raw = exception.getResponse();
      const message =
        typeof raw === 'string'
          ? raw
          : Array.isArray((raw as { message?: unknown }).message)
            ? (raw as { message: string[] }).message.join('; ')
            : String((raw as { message?: unknown }).message ?? exception.message);
      const field = exception instanceof RequestBodyError ? exception.field : undefined;
      return { status, body: { statusCode: status, error: reason(status), message, ...(field ? { field } : {}) } };
    }
    if (isDatabaseUnavailable(exception)) {
      this.logger.warn(`database unavailable: ${exception instanceof Error ? exception.message : String(exception)}`);
      const status = HttpStatus.SERVICE_UNAVAILABLE;
      return { status, body: { statusCode: status, error: reason(status), message: 'the database is unavailable; retry shortly' } };
    }
    this.logger.error(exception instanceof Error ? (exception.stack ?? exception.message) : String(exception));
    const status = HttpStatus.INTERNAL_SERVER_ERROR;
    return { status, body: { statusCode: status, error: reason(status), message: 'internal error' } };
  }
}

function reason(status: number): string {
  const name = HttpStatus[status];
  return name
    ? name
        .split('_')
        .map((w) => w[0] + w.slice(1).toLowerCase())
        .join(' ')
    : 'Error';
}
