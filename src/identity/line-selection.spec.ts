import { ValidationError } from '../common/errors';
import { accessColumnsOf, accessView, linesOfAdminBody, linesOfChannelScope, linesOfPersonChoice, scopeChannelsOf } from './line-selection';

const ID = '0b0e8f6c-1f7a-4c9e-9d7e-2a4b6c8d0e1f';

function refusal(run: () => unknown): { field?: string; message: string } {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return { field: (error as ValidationError).field, message: (error as Error).message };
  }
  throw new Error('not refused');
}

describe('linesOfAdminBody', () => {
  it('is ALL when left out or ALL, and names lines by address otherwise', () => {
    expect(linesOfAdminBody(undefined)).toEqual({ mode: 'ALL' });
    expect(linesOfAdminBody({ mode: 'ALL' })).toEqual({ mode: 'ALL' });
    expect(linesOfAdminBody({ mode: 'LINES', lines: ['+15551230001', 'Ops@Example.com'] })).toEqual({
      mode: 'LINES',
      lines: [{ address: '+15551230001' }, { address: 'Ops@Example.com' }],
    });
  });
});

describe('linesOfPersonChoice', () => {
  it('names lines by id', () => {
    expect(linesOfPersonChoice({ mode: 'ALL' })).toEqual({ mode: 'ALL' });
    expect(linesOfPersonChoice({ mode: 'LINES', lineIds: [ID] })).toEqual({ mode: 'LINES', lines: [{ id: ID }] });
  });

  it.each([
    [undefined, 'channelAccess', 'channelAccess must be an object'],
    [{ mode: 'SOME' }, 'channelAccess.mode', 'channelAccess.mode must be one of ALL, LINES'],
    [{ mode: 'ALL', lineIds: [ID] }, 'channelAccess.lineIds', 'channelAccess.lineIds is only allowed with mode LINES'],
    [{ mode: 'LINES' }, 'channelAccess.lineIds', 'channelAccess.lineIds must list at least one line with mode LINES'],
    [{ mode: 'LINES', lineIds: Array(501).fill(ID) }, 'channelAccess.lineIds', 'channelAccess.lineIds must list at most 500 lines'],
    [{ mode: 'LINES', lineIds: [ID, 7] }, 'channelAccess.lineIds[1]', 'channelAccess.lineIds[1] must be a line id'],
  ])('refuses %j naming %s', (input, field, message) => {
    expect(refusal(() => linesOfPersonChoice(input))).toEqual({ field, message });
  });
});

describe('linesOfChannelScope', () => {
  it('is ALL when left out or allChannels, and names lines by id and type otherwise', () => {
    expect(linesOfChannelScope(undefined)).toEqual({ mode: 'ALL' });
    expect(linesOfChannelScope({ allChannels: true, channels: [] })).toEqual({ mode: 'ALL' });
    expect(linesOfChannelScope({ allChannels: false, channels: [{ channelType: 'PHONE_NUMBER', channelId: ID }] })).toEqual({
      mode: 'LINES',
      lines: [{ id: ID, type: 'PHONE_NUMBER' }],
    });
  });

  it('refuses channels with allChannels, and none without', () => {
    expect(refusal(() => linesOfChannelScope({ allChannels: true, channels: [{ channelType: 'PHONE_NUMBER', channelId: ID }] }))).toEqual({
      field: 'channelScope.channels',
      message: 'channelScope.channels must be empty when allChannels is true',
    });
    expect(refusal(() => linesOfChannelScope({ allChannels: false }))).toEqual({
      field: 'channelScope.channels',
      message: 'channelScope.channels must hold at least 1 entry when allChannels is false',
    });
  });
});

describe('writers', () => {
  it("writes a key's columns: addresses in canonical form, each once", () => {
    expect(accessColumnsOf({ mode: 'ALL' })).toEqual({ channelAccessMode: 'ALL', allowedAddresses: [] });
    expect(accessColumnsOf({ mode: 'LINES', lines: [{ address: ' Ops@Example.com ' }, { address: 'ops@example.com' }, { address: '+15551230001' }] })).toEqual({
      channelAccessMode: 'LINES',
      allowedAddresses: ['ops@example.com', '+15551230001'],
    });
  });

  it("writes the view of stored access, and a webhook scope's channels", () => {
    expect(accessView('ALL', ['x'])).toEqual({ mode: 'ALL' });
    expect(accessView('LINES', ['x'])).toEqual({ mode: 'LINES', lines: ['x'] });
    expect(scopeChannelsOf({ mode: 'ALL' })).toBeNull();
    expect(scopeChannelsOf({ mode: 'LINES', lines: [{ id: ID, type: 'EMAIL_ACCOUNT' }] })).toEqual([{ channelType: 'EMAIL_ACCOUNT', channelId: ID }]);
  });
});
