import { ValidationError } from './errors';
import { containsPattern, decodeCursor, encodeCursor, isIsoTimestamp } from './keyset-cursor';

describe('keyset cursor', () => {
  const id = '0b8e6a4c-1f2d-4e3a-9b5c-7d6e5f4a3b2c';
  const key = '2026-11-22T13:57:46.564Z';

  it('round-trips a position for the tool that made it', () => {
    expect(decodeCursor('list_threads', encodeCursor('list_threads', { key, id }), isIsoTimestamp)).toEqual({ key, id });
  });

  it.each([
    ['another tool\'s cursor', encodeCursor('get_thread', { key, id })],
    ['a key of the wrong form', encodeCursor('list_threads', { key: 'yesterday', id })],
    ['an id that is not a UUID', Buffer.from(JSON.stringify(['list_threads', key, 'x'])).toString('base64url')],
    ['not JSON', 'bm90LWpzb24'],
    ['a cut-short cursor', encodeCursor('list_threads', { key, id }).slice(0, -4)],
    ['an object', Buffer.from(JSON.stringify({ key, id })).toString('base64url')],
  ])('refuses %s as a ValidationError naming cursor', (_, raw) => {
    let error: unknown;
    try {
      decodeCursor('list_threads', raw, isIsoTimestamp);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ValidationError);
    expect(error).toMatchObject({ field: 'cursor', message: 'cursor is not valid: pass the nextCursor of a previous list_threads answer' });
  });

  it('accepts only millisecond ISO timestamps as time keys', () => {
    expect(isIsoTimestamp(key)).toBe(true);
    expect(isIsoTimestamp('2026-11-22T13:57:46Z')).toBe(false);
    expect(isIsoTimestamp('2026-13-45T13:57:46.564Z')).toBe(false);
  });

  it('escapes LIKE wildcards so a query matches them literally', () => {
    expect(containsPattern('50%_off\\')).toBe('%50\\%\\_off\\\\%');
  });
});
