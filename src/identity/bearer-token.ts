import { Request } from 'express';

/** The token of an `Authorization: Bearer <token>` header, or null: how API keys, OAuth access tokens and the admin and ingest tokens are presented. */
export function bearerToken(request: Request): string | null {
  const header = request.headers.authorization;
  if (typeof header !== 'string') return null;
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  return match ? match[1] : null;
}
