import { Caller } from '../auth/caller';
import { ALL_KEY_PERMISSIONS } from '../auth/key-permissions';
import { Person } from '../auth/person';

/**
 * The caller of the services that hold the rules (webhooks, deliveries), for a person signed in to
 * the web app: their user, org, tier and live role, with access to all channels over the lines they
 * may use now, and every key permission (a person is bound by their role only). A session has no API key, so `keyId` is null: the key's rate limit and revocation
 * checks belong to the MCP endpoint, and no service reads it.
 */
export function callerOf(person: Person): Caller {
  return {
    keyId: null,
    userId: person.userId,
    orgId: person.orgId,
    orgTier: person.orgTier,
    role: person.role,
    channelAccess: 'ALL',
    lines: person.lines,
    permissions: ALL_KEY_PERMISSIONS,
  };
}
