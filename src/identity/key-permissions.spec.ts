import { canonicalPermissions, keyPermissionsProblem } from './key-permissions';

describe('keyPermissionsProblem', () => {
  it('accepts any non-empty set of the three, in any order', () => {
    for (const ok of [['read'], ['send'], ['webhooks'], ['webhooks', 'read'], ['read', 'send', 'webhooks']]) expect(keyPermissionsProblem(ok)).toBeNull();
  });

  it.each([
    [[], 'permissions must hold at least one of read, send, webhooks: a key without any could call no tool'],
    [['read', 'admin'], 'permissions must each be one of read, send, webhooks; "admin" is not'],
    [['READ'], 'permissions must each be one of read, send, webhooks; "READ" is not'],
    [[1], 'permissions must each be one of read, send, webhooks; 1 is not'],
    [['read', 'read'], 'permissions must not contain duplicates'],
    ['read', 'permissions must be a list of read, send, webhooks'],
    [null, 'permissions must be a list of read, send, webhooks'],
  ])('refuses %j, naming permissions', (value, message) => {
    expect(keyPermissionsProblem(value)).toBe(message);
  });
});

describe('canonicalPermissions', () => {
  it('orders read, send, webhooks', () => {
    expect(canonicalPermissions(['webhooks', 'read'])).toEqual(['read', 'webhooks']);
  });
});
