import { PrincipalRef } from '../../identity/principal';
import { ApiKey } from '../api-key.entity';

/**
 * Who manages a key, as each key-management use case takes it: the operator (the admin API, with
 * the admin token: any key, acting for no person), or a person (Settings → API keys: their own
 * keys, and for an OWNER or ADMIN the org's other keys).
 */
export type KeyManager = { operator: true } | { person: PrincipalRef };

/** The operator, as KeyManager. */
export const OPERATOR: KeyManager = { operator: true };

/** What a key may reach and do, as its columns hold it. */
export type KeyAccess = Pick<ApiKey, 'channelAccessMode' | 'allowedAddresses'>;
