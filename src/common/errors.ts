/**
 * Domain errors: each has a code that every surface maps to its own answer in one place (REST
 * routes and pages: the status table of error-status.ts; JSON-RPC tools: a tool error). Messages
 * are written for the caller and never carry secrets.
 */
export const DOMAIN_ERROR_CODES = [
  'VALIDATION',
  'NOT_FOUND',
  'CONFLICT',
  'FORBIDDEN',
  'UNAUTHORIZED',
  'CAP_REACHED',
  'URL_REFUSED',
  'RATE_LIMITED',
  'UNPROCESSABLE',
  'SEND_REFUSED',
] as const;
export type DomainErrorCode = (typeof DOMAIN_ERROR_CODES)[number];

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

/** The Protected Resource Metadata URL (RFC 9728) and the scopes a 401 from a protected resource names. */
export interface ResourceChallenge {
  resourceMetadata: string;
  scope: string;
}

export class UnauthorizedError extends DomainError {
  readonly code = 'UNAUTHORIZED';

  /** False when no credentials were sent at all (RFC 6750: then the challenge carries no error code). */
  constructor(
    message: string,
    readonly credentialsSent = true,
    /** What the challenge names on a protected resource (the MCP endpoint): its metadata (RFC 9728) and scopes. */
    readonly resource?: ResourceChallenge,
  ) {
    super(message);
  }
}

export class CapReachedError extends DomainError {
  readonly code = 'CAP_REACHED';
}

/** Well-formed input the service could not act on: a server it was told to log in to refused or could not be reached. */
export class UnprocessableError extends DomainError {
  readonly code = 'UNPROCESSABLE';
}

export class UrlRefusedError extends DomainError {
  readonly code = 'URL_REFUSED';
}

/** Too many calls (in a window, or at once): the caller may repeat the request after `retryAfterSeconds`. */
export class RateLimitedError extends DomainError {
  readonly code = 'RATE_LIMITED';

  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(message);
  }
}

/**
 * A send a rule of the org refuses (conversations/outbound/send-gate.ts): `rule` names it (as the
 * error's text does), and a rule of time (a limit per hour or day, quiet hours) says when the same
 * send would pass: `retryAfterSeconds` (Retry-After, answered with 429) and `passesAt`. A rule of
 * whom (an opt-out, a deny list, the org's own line) never passes by waiting (403).
 */
export class SendRefusedError extends DomainError {
  readonly code = 'SEND_REFUSED';

  constructor(
    message: string,
    readonly rule: string,
    readonly passesAt: Date | null = null,
    field?: string,
  ) {
    super(message, field);
  }

  /** Whole seconds until the send would pass (at least 1), or null for a rule waiting cannot pass. */
  get retryAfterSeconds(): number | null {
    return this.passesAt === null ? null : Math.max(1, Math.ceil((this.passesAt.getTime() - Date.now()) / 1000));
  }
}

/** Seconds after which the request may be repeated, when the error says so (rate limits, a send policy's window). */
export function retryAfterOf(error: unknown): number | null {
  if (error instanceof RateLimitedError) return error.retryAfterSeconds;
  if (error instanceof SendRefusedError) return error.retryAfterSeconds;
  return null;
}

const UNIQUE_VIOLATION = '23505';
const FOREIGN_KEY_VIOLATION = '23503';
const UNDEFINED_TABLE = '42P01';
const LOCK_NOT_AVAILABLE = '55P03';
const CHECK_VIOLATION = '23514';

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

/** True when a database error is PostgreSQL's undefined_table: a statement named a table that is not there (a dropped partition). */
export function isUndefinedTable(error: unknown): boolean {
  const e = error as { code?: string; driverError?: { code?: string } };
  return (e?.driverError?.code ?? e?.code) === UNDEFINED_TABLE;
}

/**
 * True when a database error is PostgreSQL's "no partition of relation ... found for row" on one
 * of `tables`: a check_violation that names its table and no constraint (a CHECK's violation names
 * its constraint). Read from the error's fields, not its message, which lc_messages may translate.
 */
export function isNoPartitionFor(error: unknown, tables: readonly string[]): boolean {
  const e = error as { code?: string; table?: string; constraint?: string; driverError?: { code?: string; table?: string; constraint?: string } };
  const fields = e?.driverError ?? e;
  return fields?.code === CHECK_VIOLATION && fields.constraint === undefined && tables.includes(fields.table ?? '');
}

/** True when a database error is PostgreSQL's lock_not_available: a statement's lock_timeout ran out. */
export function isLockNotAvailable(error: unknown): boolean {
  const e = error as { code?: string; driverError?: { code?: string } };
  return (e?.driverError?.code ?? e?.code) === LOCK_NOT_AVAILABLE;
}

/** Network errors and PostgreSQL states that mean "the database cannot be reached right now". */
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  '57P01', // admin_shutdown: terminating connection due to administrator command
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now: the database system is starting up / shutting down
  '08000',
  '08001',
  '08003',
  '08004',
  '08006', // connection exceptions
  '53300', // too_many_connections
]);
const UNAVAILABLE_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection is not established/i;

/**
 * True when an error (a pg error, a TypeORM QueryFailedError around one, or a pool timeout) says
 * the database is unreachable: surfaces answer 503 and the caller retries, instead of a 500.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (let e = error as { code?: unknown; message?: unknown; driverError?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 4; depth++) {
    if (typeof e.code === 'string' && UNAVAILABLE_CODES.has(e.code)) return true;
    if (typeof e.message === 'string' && UNAVAILABLE_MESSAGES.test(e.message)) return true;
    e = (e.driverError ?? e.cause) as typeof e;
  }
  return false;
}
