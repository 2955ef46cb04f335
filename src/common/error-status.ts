import { HttpStatus } from '@nestjs/common';
import { DomainError, DomainErrorCode, SendRefusedError } from './errors';

/**
 * The HTTP status of each domain error code: the one table behind the JSON answers of REST routes
 * (HttpErrorFilter) and the web app's pages (PageErrorFilter, and the forms that show a refusal
 * next to its field), so a refusal answers the same status on every HTTP surface.
 */
export const DOMAIN_ERROR_STATUS: Readonly<Record<DomainErrorCode, number>> = {
  VALIDATION: HttpStatus.BAD_REQUEST,
  NOT_FOUND: HttpStatus.NOT_FOUND,
  CONFLICT: HttpStatus.CONFLICT,
  FORBIDDEN: HttpStatus.FORBIDDEN,
  UNAUTHORIZED: HttpStatus.UNAUTHORIZED,
  CAP_REACHED: HttpStatus.CONFLICT,
  URL_REFUSED: HttpStatus.BAD_REQUEST,
  RATE_LIMITED: HttpStatus.TOO_MANY_REQUESTS,
  UNPROCESSABLE: HttpStatus.UNPROCESSABLE_ENTITY,
  SEND_REFUSED: HttpStatus.FORBIDDEN,
};

/** The HTTP status a domain error answers (a send refused until later: 429, the table says 403 for the rest). */
export function httpStatusOf(error: DomainError): number {
  // A send refused until a window opens is "too many requests": the answer carries Retry-After.
  if (error instanceof SendRefusedError && error.passesAt !== null) return HttpStatus.TOO_MANY_REQUESTS;
  return DOMAIN_ERROR_STATUS[error.code];
}
