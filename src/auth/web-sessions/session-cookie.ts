import { parseCookie, stringifySetCookie } from 'cookie';
import { Request } from 'express';

/**
 * The session cookie: HttpOnly (no script reads it), SameSite=Lax (not sent on cross-site POSTs),
 * Path=/, and Secure when the service is served over https, where it also takes the `__Host-`
 * prefix (the browser then refuses it from any other host or path).
 */
export class SessionCookie {
  readonly name: string;
  private readonly secure: boolean;

  constructor(publicBaseUrl: string) {
    this.secure = publicBaseUrl.startsWith('https://');
    this.name = this.secure ? '__Host-mss_session' : 'mss_session';
  }

  read(request: Request): string | null {
    const header = request.headers.cookie;
    if (typeof header !== 'string') return null;
    return parseCookie(header)[this.name] ?? null;
  }

  set(token: string, maxAgeSeconds: number): string {
    return stringifySetCookie({ name: this.name, value: token, httpOnly: true, sameSite: 'lax', path: '/', secure: this.secure, maxAge: maxAgeSeconds });
  }

  clear(): string {
    return stringifySetCookie({ name: this.name, value: '', httpOnly: true, sameSite: 'lax', path: '/', secure: this.secure, maxAge: 0 });
  }
}
