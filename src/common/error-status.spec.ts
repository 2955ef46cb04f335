import { DOMAIN_ERROR_STATUS, httpStatusOf } from './error-status';
import * as errors from './errors';
import { DOMAIN_ERROR_CODES, DomainError } from './errors';

/** Every concrete DomainError class errors.ts exports, made with a message (and the arguments some require). */
function everyDomainError(): DomainError[] {
  const exported: unknown[] = Object.values(errors);
  return exported
    .filter((value): value is new (message: string, more: unknown) => DomainError => typeof value === 'function' && value.prototype instanceof DomainError)
    .map((type) => new type('refused', 1));
}

describe('DOMAIN_ERROR_STATUS', () => {
  it('gives each code its status: the one table of REST routes and pages', () => {
    expect(DOMAIN_ERROR_STATUS).toEqual({
      VALIDATION: 400,
      NOT_FOUND: 404,
      CONFLICT: 409,
      FORBIDDEN: 403,
      UNAUTHORIZED: 401,
      CAP_REACHED: 409,
      URL_REFUSED: 400,
      RATE_LIMITED: 429,
      SEND_REFUSED: 403,
      UNPROCESSABLE: 422,
    });
  });

  it('has a 4xx status for every code, and for the code of every DomainError class (a new code without a status fails here)', () => {
    const thrown = everyDomainError();
    expect(thrown.length).toBeGreaterThanOrEqual(DOMAIN_ERROR_CODES.length);
    const codes = new Set<string>([...DOMAIN_ERROR_CODES, ...thrown.map((error) => error.code)]);
    for (const code of codes) {
      const status = (DOMAIN_ERROR_STATUS as Record<string, number | undefined>)[code];
      expect({ code, status }).toEqual({ code, status: expect.any(Number) });
      expect(status).toBeGreaterThanOrEqual(400);
      expect(status).toBeLessThan(500);
    }
    expect(Object.keys(DOMAIN_ERROR_STATUS).sort()).toEqual([...codes].sort());
  });

  it('httpStatusOf answers the status of the error’s code', () => {
    expect(httpStatusOf(new errors.CapReachedError('endpoint cap reached'))).toBe(409);
    expect(httpStatusOf(new errors.UrlRefusedError('private address', 'url'))).toBe(400);
    expect(httpStatusOf(errors.NotFoundError.of('webhook endpoint', 'x'))).toBe(404);
  });
});
