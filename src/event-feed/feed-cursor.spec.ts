import { randomBytes } from 'node:crypto';
import { FeedRefusal } from './event-feed.errors';
import { FeedCursors } from './feed-cursor';

const SCOPE = '0123456789abcdef';
const KEY = randomBytes(32);
const cursors = new FeedCursors({ secretsKey: KEY, secretsKeyFallbacks: [] });

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
      const cursor = cursors.encode({ position, scope: SCOPE });
      expect(cursor).toMatch(/^ecur1_[A-Za-z0-9_-]+$/);
      expect(cursor.length).toBeLessThanOrEqual(200);
      expect(cursors.decode(cursor, SCOPE)).toBe(position);
    }
  });

  it('show nothing of the position: sealed; one position gives one cursor, the next one an unrelated one', () => {
    const a = cursors.encode({ position: 424242n, scope: SCOPE });
    const b = cursors.encode({ position: 424243n, scope: SCOPE });
    expect(cursors.encode({ position: 424242n, scope: SCOPE })).toBe(a);
    for (const cursor of [a, b]) expect(Buffer.from(cursor.slice(6), 'base64url').toString('latin1')).not.toContain('42424');
    expect(a.slice(0, 12)).not.toBe(b.slice(0, 12));
  });

  it('open after a key rotation (SECRETS_KEY_FALLBACKS), and not under another key', () => {
    const old = cursors.encode({ position: 7n, scope: SCOPE });
    const rotated = new FeedCursors({ secretsKey: randomBytes(32), secretsKeyFallbacks: [KEY] });
    expect(rotated.decode(old, SCOPE)).toBe(7n);
    const stranger = new FeedCursors({ secretsKey: randomBytes(32), secretsKeyFallbacks: [] });
    expect(refusalOf(() => stranger.decode(old, SCOPE)).data).toEqual({ field: 'cursor' });
  });

  const sealed = cursors.encode({ position: 5n, scope: SCOPE });
  const flipped = sealed.slice(0, 20) + (sealed[20] === 'A' ? 'B' : 'A') + sealed.slice(21);
  it.each([
    ['another system', 'historyId_99842'],
    ['empty', ''],
    ['our prefix, garbage after', 'ecur1_!!!'],
    ['our prefix, nothing after', 'ecur1_'],
    ['a position written by hand (the unsealed form)', 'ecur1_' + Buffer.from(`1.${SCOPE}`).toString('base64url')],
    ['one character of a real cursor changed', flipped],
    ['a real cursor cut short', sealed.slice(0, -4)],
    ['too long', 'ecur1_' + 'A'.repeat(300)],
  ])('refuses a malformed cursor (%s), naming the field', (_what, cursor) => {
    const refusal = refusalOf(() => cursors.decode(cursor, SCOPE, 'cursor'));
    expect(refusal.kind).toBe('invalid');
    expect(refusal.data).toEqual({ field: 'cursor' });
    expect(refusal.message).toContain('not a cursor this server gave out');
  });

  it('refuses a cursor minted for another subscription (event name or filters)', () => {
    const cursor = cursors.encode({ position: 5n, scope: 'fedcba9876543210' });
    const refusal = refusalOf(() => cursors.decode(cursor, SCOPE));
    expect(refusal.kind).toBe('invalid');
    expect(refusal.message).toContain('another event name or other arguments');
  });
});
