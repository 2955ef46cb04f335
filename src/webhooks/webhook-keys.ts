import { createHash } from 'node:crypto';
import { PUBLIC_KEY_PREFIX } from '../sdk';

/** How long a receiver (or a cache between) may keep a JWK Set: the signature tolerance. */
export const JWKS_MAX_AGE_SECONDS = 300;

/** Where an endpoint's JWK Set is published (WebhookKeysController), from the service's base URL. */
export function jwksPath(endpointId: string): string {
  return `/webhooks/${endpointId}/jwks.json`;
}

/** An Ed25519 public key as a JWK (RFC 8037), with its RFC 7638 thumbprint as `kid`. */
export interface Ed25519Jwk {
  kty: 'OKP';
  crv: 'Ed25519';
  x: string;
  kid: string;
  use: 'sig';
  alg: 'EdDSA';
}

/** `whpk_` public keys (current first) as a JWK Set, in that order. */
export function publicKeysAsJwkSet(publicKeys: string[]): { keys: Ed25519Jwk[] } {
  return {
    keys: publicKeys.map((whpk) => {
      const x = Buffer.from(whpk.slice(PUBLIC_KEY_PREFIX.length), 'base64').toString('base64url');
      // RFC 7638: SHA-256 of the required members in lexicographic order, no whitespace.
      const kid = createHash('sha256').update(`{"crv":"Ed25519","kty":"OKP","x":"${x}"}`).digest('base64url');
      return { kty: 'OKP', crv: 'Ed25519', x, kid, use: 'sig', alg: 'EdDSA' };
    }),
  };
}
