import { HttpStatus } from '@nestjs/common';
import { DomainError, DomainErrorCode } from './errors';

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
};

/** The HTTP status a domain error answers. */
export function httpStatusOf(error: DomainError): number {
  return DOMAIN_ERROR_STATUS[error.code];
}
