import { roleAtLeast, USER_ROLES } from './roles';

describe('roleAtLeast', () => {
  it.each([
    ['OWNER', 'OWNER', true],
    ['OWNER', 'ADMIN', true],
    ['OWNER', 'MEMBER', true],
    ['ADMIN', 'OWNER', false],
    ['ADMIN', 'ADMIN', true],
    ['ADMIN', 'MEMBER', true],
    ['MEMBER', 'OWNER', false],
    ['MEMBER', 'ADMIN', false],
    ['MEMBER', 'MEMBER', true],
  ] as const)('%s at least %s: %s', (role, lowest, expected) => {
    expect(roleAtLeast(role, lowest)).toBe(expected);
  });

  it('orders the roles lowest first', () => {
    expect(USER_ROLES).toEqual(['MEMBER', 'ADMIN', 'OWNER']);
  });
});
