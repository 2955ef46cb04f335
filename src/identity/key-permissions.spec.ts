import { canonicalPermissions, keyPermissionsProblem } from './key-permissions';

describe('keyPermissionsProblem', () => {
  it('accepts any non-empty set of the four but send with draft, in any order', () => {
    for (const ok of [['read'], ['send'], ['draft'], ['webhooks'], ['webhooks', 'read'], ['read', 'send', 'webhooks'], ['draft', 'read', 'webhooks']]) {
      expect(keyPermissionsProblem(ok)).toBeNull();
    }
  });

  it.each([
    [[], 'permissions must hold at least one of read, send, draft, webhooks: a key without any could call no tool'],
    [['read', 'admin'], 'permissions must each be one of read, send, draft, webhooks; "admin" is not'],
    [['READ'], 'permissions must each be one of read, send, draft, webhooks; "READ" is not'],
    [[1], 'permissions must each be one of read, send, draft, webhooks; 1 is not'],
    [['read', 'read'], 'permissions must not contain duplicates'],
    [
      ['read', 'draft', 'send'],
      'permissions must not hold both send and draft: draft is the draft-only form of send (its sends wait for a person to approve them); choose one',
    ],
    ['read', 'permissions must be a list of read, send, draft, webhooks'],
    [null, 'permissions must be a list of read, send, draft, webhooks'],
  ])('refuses %j, naming permissions', (value, message) => {
    expect(keyPermissionsProblem(value)).toBe(message);
  });
});

describe('canonicalPermissions', () => {
  it('orders read, send, draft, webhooks', () => {
    expect(canonicalPermissions(['webhooks', 'read'])).toEqual(['read', 'webhooks']);
    expect(canonicalPermissions(['webhooks', 'draft', 'read'])).toEqual(['read', 'draft', 'webhooks']);
  });
});
