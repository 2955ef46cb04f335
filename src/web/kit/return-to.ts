import { parseCookie, stringifySetCookie } from 'cookie';
import { Request } from 'express';

/**
 * Where sign-in returns to: only an OAuth authorization request (the consent page), so the
 * cookie can send nobody anywhere else (no open redirect). HttpOnly, SameSite=Lax, an hour.
 */
const NAME = 'mss_return_to';
const RETURNABLE = /^\/oauth\/authorize\?[^\s\\]*$/;

export function returnToCookie(path: string, secure: boolean): string {
  return stringifySetCookie({ name: NAME, value: path, httpOnly: true, sameSite: 'lax', path: '/', secure, maxAge: 3600 });
}

export function clearReturnTo(secure: boolean): string {
  return stringifySetCookie({ name: NAME, value: '', httpOnly: true, sameSite: 'lax', path: '/', secure, maxAge: 0 });
}

/** The page to return to after sign-in, if the cookie names one that may be returned to. */
export function returnTo(request: Request): string | null {
  const header = request.headers.cookie;
  if (typeof header !== 'string') return null;
  const value = parseCookie(header)[NAME];
  return value !== undefined && RETURNABLE.test(value) ? value : null;
}
