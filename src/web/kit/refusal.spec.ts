import { CapReachedError, ConflictError, ForbiddenError, NotFoundError, RateLimitedError, ValidationError } from '../../common/errors';
import { noticeKind, noticeText, withNotice } from './notices';
import { FieldTable, refusalOf } from './refusal';

describe('refusalOf: a refusal of a form, by the one error table', () => {
  const table: FieldTable<'url' | 'channelScope' | 'host'> = {
    fields: { url: 'url', channelScope: 'channelScope', 'imap.host': 'host' },
    notFound: ['channelScope'],
  };

  it('names the form field of the refused argument (as it is, else its first segment), with the status of its code', () => {
    expect(refusalOf(new ValidationError('url must be https', 'url'), table)).toMatchObject({ status: 400, field: 'url', message: 'url must be https' });
    expect(refusalOf(new ValidationError('bad', 'channelScope.channels[0]'), table)).toMatchObject({ field: 'channelScope' });
    expect(refusalOf(new ValidationError('bad', 'imap.host'), table)).toMatchObject({ field: 'host' });
    expect(refusalOf(new CapReachedError('cap reached'), table)).toMatchObject({ status: 409, field: undefined });
    expect(refusalOf(new ConflictError('taken', 'url'), table)).toMatchObject({ status: 409, field: 'url' });
  });

  it('leaves to the error page what is not the form’s: other codes, not found (unless the table says), unlisted arguments, other errors', () => {
    const thrown = (error: unknown, t = table) => {
      try {
        refusalOf(error, t);
      } catch (e) {
        return e;
      }
      return 'shown on the form';
    };
    for (const error of [
      new ForbiddenError('no', 'url'),
      new RateLimitedError('slow down', 1),
      NotFoundError.of('endpoint', 'x', 'endpointId'),
      NotFoundError.of('line', 'x', 'url'),
      new ValidationError('bad', 'endpointId'),
      new Error('boom'),
    ]) {
      expect(thrown(error)).toBe(error);
    }
    expect(refusalOf(NotFoundError.of('line', 'x', 'channelScope.channels[0].channelId'), table)).toMatchObject({ status: 404, field: 'channelScope' });
    expect(refusalOf(new ValidationError('bad', 'endpointId'), { ...table, unlisted: 'whole' })).toMatchObject({ field: undefined });
  });

  it('says a refusal in the form’s words when the table gives them', () => {
    const worded: FieldTable<'label'> = { fields: { add: 'label' }, say: (error) => error.message.replace(/^add\[0\]\.name/, 'label') };
    expect(refusalOf(new ValidationError('add[0].name is too long', 'add[0].name'), worded).message).toBe('label is too long');
  });
});

describe('notices', () => {
  const NOTICES = { saved: 'Saved.', deleted: 'Deleted.' } as const;

  it('reads only a kind of the page’s table, never free text', () => {
    expect(noticeKind(NOTICES, 'saved')).toBe('saved');
    expect(noticeText(NOTICES, 'deleted')).toBe('Deleted.');
    for (const value of ['toString', '<b>hi</b>', undefined, ['saved'], 1]) expect(noticeText(NOTICES, value)).toBeUndefined();
  });

  it('writes the kind under the one query key (or a page’s own)', () => {
    expect(withNotice('/settings/webhooks', 'deleted')).toBe('/settings/webhooks?done=deleted');
    expect(withNotice('/x?a=1', 'saved')).toBe('/x?a=1&done=saved');
    expect(withNotice('/settings/api-keys', 'saved', 'notice')).toBe('/settings/api-keys?notice=saved');
  });
});
