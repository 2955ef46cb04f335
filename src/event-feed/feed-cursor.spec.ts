import { FeedRefusal } from './event-feed.errors';
import { decodeCursor, encodeCursor } from './feed-cursor';

const SCOPE = '0123456789abcdef';

function refusalOf(run: () => unknown): FeedRefusal {
  try {
    run();
  } catch (error) {
    if (error instanceof FeedRefusal) return error;
    throw error;
  }
  throw new Error('not refused');
}

describe('feed cursors', () => {
  it('carry a position of the log through an opaque string, up to the largest bigint', () => {
    for (const position of [0n, 1n, 123456789n, 9223372036854775807n]) {
      const cursor = encodeCursor({ position, scope: SCOPE });
      expect(cursor).toMatch(/^ecur1_[A-Za-z0-9_-]+$/);
      expect(decodeCursor(cursor, SCOPE)).toBe(position);
    }
  });

  it.each([
    ['another system', 'historyId_99842'],
    ['empty', ''],
    ['our prefix, garbage after', 'ecur1_!!!'],
    ['a negative position', 'ecur1_' + Buffer.from(`-1.${SCOPE}`).toString('base64url')],
    ['leading zeros', 'ecur1_' + Buffer.from(`01.${SCOPE}`).toString('base64url')],
    ['no scope', 'ecur1_' + Buffer.from('12').toString('base64url')],
    ['too long', 'ecur1_' + 'A'.repeat(300)],
  ])('refuses a malformed cursor (%s), naming the field', (_what, cursor) => {
    const refusal = refusalOf(() => decodeCursor(cursor, SCOPE, 'cursor'));
    expect(refusal.kind).toBe('invalid');
    expect(refusal.data).toEqual({ field: 'cursor' });
    expect(refusal.message).toContain('not a cursor this server gave out');
  });

  it('refuses a cursor minted for another subscription (event name or filters)', () => {
    const cursor = encodeCursor({ position: 5n, scope: 'fedcba9876543210' });
    const refusal = refusalOf(() => decodeCursor(cursor, SCOPE));
    expect(refusal.kind).toBe('invalid');
    expect(refusal.message).toContain('another event name or other arguments');
  });
});
