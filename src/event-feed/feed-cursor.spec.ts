import { createCipheriv, hkdfSync, randomBytes } from 'node:crypto';
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
      expect(cursor).toMatch(/^ecur2_[A-Za-z0-9_-]+$/);
      expect(cursor.length).toBeLessThanOrEqual(200);
      expect(cursors.decode(cursor, SCOPE)).toBe(position);
    }
  });

  it('show nothing of the position: sealed, a fresh cursor each time, all of one length', () => {
    const a = cursors.encode({ position: 424242n, scope: SCOPE });
    const again = cursors.encode({ position: 424242n, scope: SCOPE });
    const b = cursors.encode({ position: 424243n, scope: SCOPE });
    // Minted twice for one position, two unrelated strings: a caller cannot tell "nothing happened" from "the org's head moved".
    expect(again).not.toBe(a);
    expect(cursors.decode(again, SCOPE)).toBe(424242n);
    for (const cursor of [a, b]) expect(Buffer.from(cursor.slice(6), 'base64url').toString('latin1')).not.toContain('42424');
    expect(a.slice(0, 12)).not.toBe(b.slice(0, 12));
    const lengths = new Set([0n, 7n, 424242n, 9223372036854775807n].map((position) => cursors.encode({ position, scope: SCOPE }).length));
    expect(lengths.size).toBe(1);
  });

  it('still open the first form (ecur1_, minted before cursors were salted)', () => {
    const key = Buffer.from(hkdfSync('sha256', KEY, Buffer.alloc(0), 'event-feed-cursors', 32));
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    const sealed = Buffer.concat([cipher.update(`31337.${SCOPE}`, 'utf8'), cipher.final()]);
    const legacy = 'ecur1_' + Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64url');
    expect(cursors.decode(legacy, SCOPE)).toBe(31337n);
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
    ['our prefix, garbage after', 'ecur2_!!!'],
    ['our prefix, nothing after', 'ecur2_'],
    ['a position written by hand (the unsealed form)', 'ecur2_' + Buffer.from(`1.${SCOPE}`).toString('base64url')],
    ['the first form, written by hand', 'ecur1_' + Buffer.from(`1.${SCOPE}`).toString('base64url')],
    ['one character of a real cursor changed', flipped],
    ['a real cursor cut short', sealed.slice(0, -4)],
    ['too long', 'ecur2_' + 'A'.repeat(300)],
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
