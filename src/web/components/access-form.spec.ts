import { h } from 'preact';
import { renderToString } from 'preact-render-to-string';
import { ValidationError } from '../../common/errors';
import { choiceOf, choiceOfAccess, formErrorsOf, NOT_ASKED_HINT, permissionsOf, PermissionsFields } from './access-form';

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

  it('shows a permission outside what an app asked for unticked and disabled, saying why', () => {
    const html = renderToString(h(PermissionsFields, { chosen: ['read', 'send'], holder: 'app', offered: ['read'] }));
    expect(html).toContain('<input type="checkbox" id="permission-read" name="permission-read" value="on" checked aria-describedby="permission-read-hint"/>');
    expect(html).toContain('<input type="checkbox" id="permission-send" name="permission-send" value="on" disabled aria-describedby="permission-send-hint"/>');
    expect(html.split(NOT_ASKED_HINT)).toHaveLength(4); // under Send, Draft only and Webhooks
    expect(html).not.toContain('disabled aria-describedby="permission-read-hint"');
  });

  it.each([
    [
      new ValidationError('this app did not ask for webhooks (it asked for read): an app may be given only the permissions it asked for', 'permissions'),
      'app',
      { permissions: 'This app did not ask for webhooks (it asked for read): an app may be given only the permissions it asked for.' },
    ],
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
