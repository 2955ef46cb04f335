/**
 * Which browser origins may call `/api/mcp` (MCP transports, "Security Warning": servers MUST
 * validate the Origin header, or a page the user visits could reach the server through DNS
 * rebinding). A request without an Origin header is not from a browser page and is not judged here.
 *
 * Allowed: the origin of PUBLIC_BASE_URL, every MCP_ALLOWED_ORIGINS entry, and in development
 * only, http://localhost, http://127.0.0.1 and http://[::1] on any port. Origins are compared as
 * URLs serialise them (scheme and host lower-cased, default port dropped), never as raw text.
 */
export class OriginPolicy {
  private readonly exact: Set<string>;
  private readonly allowLoopback: boolean;

  constructor(options: { publicBaseUrl: string; allowedOrigins: readonly string[]; allowLoopback: boolean }) {
    this.exact = new Set([options.publicBaseUrl, ...options.allowedOrigins].map(serialise).filter((o): o is string => o !== null));
    this.allowLoopback = options.allowLoopback;
  }

  /**
   * Whether a browser request comes from the allowed origins' own pages: by its Origin header, or
   * without one, `Sec-Fetch-Site: same-origin`. A request with neither is not (every browser sends
   * one of them on a state-changing request). For forms and dashboards; /api/mcp judges only Origin.
   */
  sentFromOwnPages(headers: { origin?: string; 'sec-fetch-site'?: string | string[] }): boolean {
    if (typeof headers.origin === 'string') return this.allows(headers.origin);
    return headers['sec-fetch-site'] === 'same-origin';
  }

  allows(origin: string): boolean {
    const url = parseOrigin(origin);
    if (!url) return false;
    if (this.exact.has(url.origin)) return true;
    return this.allowLoopback && url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);
  }
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/** An Origin header is scheme://host[:port] and nothing else; "null", paths and user info are not origins. */
function parseOrigin(text: string): URL | null {
  if (!/^https?:\/\/[^/?#@\s]+$/i.test(text)) return null;
  try {
    return new URL(text);
  } catch {
    return null;
  }
}

function serialise(text: string): string | null {
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : null;
  } catch {
    return null;
  }
}
