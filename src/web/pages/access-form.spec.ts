import { ValidationError } from '../../common/errors';
import { choiceOf, choiceOfAccess, formErrorsOf, permissionsOf } from './access-form';

describe('the access form', () => {
  it('reads the posted choice: the mode and the ticked lines; permissions only when the form showed them', () => {
    expect(choiceOf({ access: 'LINES', 'line-a': 'on', 'line-b': 'on', _csrf: 'x' })).toEqual({ mode: 'LINES', lineIds: ['a', 'b'] });
    expect(choiceOf(undefined)).toEqual({ mode: 'ALL', lineIds: [] });
    expect(permissionsOf({ 'permission-read': 'on' })).toBeUndefined();
    expect(permissionsOf({ 'permissions-shown': 'on' })).toEqual([]);
    expect(permissionsOf({ 'permissions-shown': 'on', 'permission-send': 'on', 'permission-read': 'on' })).toEqual(['send', 'read']);
  });

  it('fills the form from a key or a grant: an address that is no longer a line is not ticked', () => {
    expect(choiceOfAccess({ mode: 'ALL' })).toEqual({ mode: 'ALL', lineIds: [] });
    expect(
      choiceOfAccess({
        mode: 'LINES',
        lines: [
          { id: 'l1', address: '+15550100' },
          { id: null, address: '+15550101' },
        ],
      }),
    ).toEqual({ mode: 'LINES', lineIds: ['l1'] });
  });

  it.each([
    [
      new ValidationError('permissions must hold at least one of read, send, webhooks: a key without any could call no tool', 'permissions'),
      'app',
      { permissions: 'Choose at least one permission: an app without any could not call any tool.' },
    ],
    [
      new ValidationError('permissions must each be one of read, send, webhooks; "admin" is not', 'permissions'),
      'key',
      { permissions: 'Permissions: permissions must each be one of read, send, webhooks; "admin" is not' },
    ],
    [
      new ValidationError('channelAccess.lineIds[0]: line x is not one of your lines', 'channelAccess.lineIds[0]'),
      'app',
      { channelAccess: 'One of the chosen lines is not one of your lines: choose among the lines below.' },
    ],
    [new ValidationError('grantId is odd', 'grantId'), 'app', null],
  ] as const)('puts the service refusal %# next to its field', (error, holder, expected) => {
    expect(formErrorsOf(error, holder)).toEqual(expected);
  });
});
