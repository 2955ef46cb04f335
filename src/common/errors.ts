/**
 * Domain errors: each has a code that every surface (admin REST, JSON-RPC tools) maps to its own
 * answer in one place. Messages are written for the caller and never carry secrets.
 */
export type DomainErrorCode =
  | 'VALIDATION'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'FORBIDDEN'
  | 'UNAUTHORIZED'
  | 'CAP_REACHED'
  | 'URL_REFUSED';

export abstract class DomainError extends Error {
  abstract readonly code: DomainErrorCode;
  /** The request field the error is about, when there is one. */
  readonly field?: string;

  constructor(message: string, field?: string) {
    super(message);
    this.name = new.target.name;
    this.field = field;
  }
}

export class ValidationError extends DomainError {
  readonly code = 'VALIDATION';
}

export class NotFoundError extends DomainError {
  readonly code = 'NOT_FOUND';

  static of(what: string, id: string, field?: string): NotFoundError {
    return new NotFoundError(`${what} ${id} not found`, field);
  }
}

export class ConflictError extends DomainError {
  readonly code = 'CONFLICT';
}

export class ForbiddenError extends DomainError {
  readonly code = 'FORBIDDEN';
}

export class UnauthorizedError extends DomainError {
  readonly code = 'UNAUTHORIZED';

  /** False when no credentials were sent at all (RFC 6750: then the challenge carries no error code). */
  constructor(message: string, readonly credentialsSent = true) {
    super(message);
  }
}

export class CapReachedError extends DomainError {
  readonly code = 'CAP_REACHED';
}

export class UrlRefusedError extends DomainError {
  readonly code = 'URL_REFUSED';
}

const UNIQUE_VIOLATION = '23505';
const FOREIGN_KEY_VIOLATION = '23503';

/** True when a database error is PostgreSQL's unique violation on the named index. */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const e = error as { code?: string; driverError?: { code?: string; constraint?: string }; constraint?: string };
  const code = e?.driverError?.code ?? e?.code;
  const name = e?.driverError?.constraint ?? e?.constraint;
  return code === UNIQUE_VIOLATION && (constraint === undefined || name === constraint);
}

export function isForeignKeyViolation(error: unknown): boolean {
  const e = error as { code?: string; driverError?: { code?: string } };
  return (e?.driverError?.code ?? e?.code) === FOREIGN_KEY_VIOLATION;
}
