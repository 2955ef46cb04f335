import { ValidationError } from './errors';
import { containsPattern, isIsoTimestamp, KeysetCursors } from './keyset-cursor';

describe('keyset cursors', () => {
  const cursors = new KeysetCursors({ secretsKey: Buffer.alloc(32, 7) });
  const id = '0b8e6a4c-1f2d-4e3a-9b5c-7d6e5f4a3b2c';
  const key = '2026-11-22T13:57:46.564Z';
  const cursor = cursors.encode('list_threads', { key, id });
  /** A cursor built the way ours are, by someone who does not hold the key. */
  const forged = (payload: unknown[], mac = cursor.split('.')[1]) => `${Buffer.from(JSON.stringify(payload)).toString('base64url')}.${mac}`;

  it('round-trips a position for the tool that made it, and is opaque', () => {
    expect(cursors.decode('list_threads', cursor, isIsoTimestamp)).toEqual({ key, id });
    expect(cursor).toMatch(/^[\w-]+\.[\w-]{22}$/);
  });

  it('stays valid for another instance with the same SECRETS_KEY (a restart, a replica), not for another key', () => {
    expect(new KeysetCursors({ secretsKey: Buffer.alloc(32, 7) }).decode('list_threads', cursor, isIsoTimestamp)).toEqual({ key, id });
    expect(() => new KeysetCursors({ secretsKey: Buffer.alloc(32, 8) }).decode('list_threads', cursor, isIsoTimestamp)).toThrow(ValidationError);
  });

  it.each([
    ["another tool's cursor", cursors.encode('get_thread', { key, id })],
    ['a re-encoded cursor with another id', forged(['list_threads', key, '1b8e6a4c-1f2d-4e3a-9b5c-7d6e5f4a3b2c'])],
    ['a forged impossible date', forged(['list_threads', '2026-02-30T00:00:00.000Z', id])],
    ['a forged year 0000', forged(['list_threads', '0000-01-01T00:00:00.000Z', id])],
    ['an unsigned cursor (the old format)', Buffer.from(JSON.stringify(['list_threads', key, id])).toString('base64url')],
    ['a signed key of the wrong form', cursors.encode('list_threads', { key: 'yesterday', id })],
    ['a signed impossible date', cursors.encode('list_threads', { key: '2026-02-30T00:00:00.000Z', id })],
    ['a signed id that is not a UUID', cursors.encode('list_threads', { key, id: 'x' })],
    ['a cut-short cursor', cursor.slice(0, -4)],
    ['a cursor with its MAC cut off', cursor.split('.')[0]],
    ['a MAC of the wrong length', `${cursor}AA`],
    ['not a cursor at all', 'bm90LWpzb24'],
    ['a lone dot', '.'],
  ])('refuses %s as a ValidationError naming cursor', (_, raw) => {
    let error: unknown;
    try {
      cursors.decode('list_threads', raw, isIsoTimestamp);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ValidationError);
    expect(error).toMatchObject({ field: 'cursor', message: 'cursor is not valid: pass the nextCursor of a previous list_threads answer' });
  });

  it('accepts only real millisecond UTC instants in years 0001-9999 as time keys', () => {
    expect(isIsoTimestamp(key)).toBe(true);
    expect(isIsoTimestamp('0001-01-01T00:00:00.000Z')).toBe(true);
    expect(isIsoTimestamp('2028-02-29T23:59:59.999Z')).toBe(true);
    for (const bad of [
      '2026-11-22T13:57:46Z',
      '2026-13-45T13:57:46.564Z',
      '2026-02-30T00:00:00.000Z',
      '2027-02-29T00:00:00.000Z',
      '0000-01-01T00:00:00.000Z',
      '2026-01-01T24:00:00.000Z',
      '2026-01-01T00:00:60.000Z',
      '+012026-01-01T00:00:00.000Z',
    ]) {
      expect([bad, isIsoTimestamp(bad)]).toEqual([bad, false]);
    }
  });

  it('escapes LIKE wildcards so a query matches them literally', () => {
    expect(containsPattern('50%_off\\')).toBe('%50\\%\\_off\\\\%');
  });
});
