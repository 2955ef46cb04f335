import { Request } from 'express';
import { ResourceChallenge } from '../common/errors';
import { KeyPrincipal } from './principal';

/**
 * Callers through an OAuth access token (oauth/): provided by the OAuth module, found by the
 * AuthGuard beside API keys. A grant acts exactly as an API key of its person with the access
 * chosen at consent; its id is a UUID of version 8 (an API key's is version 4), so rate limits and
 * download links, keyed by `keyId`, never mix a grant with a key.
 */
export abstract class GrantCallers {
  /** The caller of an access token presented on `request`'s URL (its resource), or null: unknown, expired, revoked, or for another resource. */
  abstract resolve(token: string, request: Request): Promise<KeyPrincipal | null>;
  /** False once the grant is revoked. */
  abstract isActive(grantId: string): Promise<boolean>;
  /** What a 401 from `request`'s URL names, when it is a protected resource: its metadata URL (RFC 9728) and scopes. */
  abstract challengeFor(request: Request): ResourceChallenge | undefined;
}
