import { KeyPrincipal, Principal } from '../identity/principal';
import { endedAccess } from './event-streams';

const caller = (over: Partial<KeyPrincipal> = {}): KeyPrincipal => ({
  keyId: 'k',
  userId: 'u',
  orgId: 'o',
  orgTier: 'POWER' as Principal['orgTier'],
  role: 'MEMBER' as Principal['role'],
  channelAccess: 'LINES',
  lines: [{ id: 'l1' }, { id: 'l2' }] as Principal['lines'],
  permissions: ['read', 'webhooks'],
  ...over,
});

describe('endedAccess: when an open event stream must end', () => {
  it('goes on with the same access, or wider', () => {
    expect(endedAccess(caller(), caller())).toBeNull();
    expect(endedAccess(caller(), caller({ lines: [{ id: 'l1' }, { id: 'l2' }, { id: 'l3' }] as Principal['lines'] }))).toBeNull();
    expect(endedAccess(caller(), caller({ channelAccess: 'ALL' }))).toBeNull();
  });

  it('ends when the credential no longer works, or names another person', () => {
    expect(endedAccess(caller(), null)?.data).toEqual({ reason: 'access_revoked' });
    expect(endedAccess(caller(), caller({ userId: 'v' }))?.data).toEqual({ reason: 'access_revoked' });
  });

  it('ends without the webhooks permission', () => {
    expect(endedAccess(caller(), caller({ permissions: ['read'] }))?.data).toEqual({ reason: 'missing_permission', permission: 'webhooks' });
  });

  it('ends when a line is lost or channel access narrows from all', () => {
    expect(endedAccess(caller(), caller({ lines: [{ id: 'l2' }] as Principal['lines'] }))?.data).toEqual({ reason: 'access_narrowed' });
    expect(endedAccess(caller({ channelAccess: 'ALL' }), caller())?.data).toEqual({ reason: 'access_narrowed' });
    expect(endedAccess(caller(), caller())?.kind).toBeUndefined();
    expect(endedAccess(caller(), null)?.kind).toBe('forbidden');
  });
});
