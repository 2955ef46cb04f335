import { randomBytes, randomUUID } from 'node:crypto';
import { AppConfig } from '../config/app-config';
import { AttachmentUrls, LinkHolder, SignedLinkQuery } from './attachment-urls';

const A = randomBytes(32);
const B = randomBytes(32);
const urls = (secretsKey: Buffer, secretsKeyFallbacks: Buffer[] = []) =>
  new AttachmentUrls({ secretsKey, secretsKeyFallbacks, publicBaseUrl: 'https://sync.example.com' } as AppConfig);

function parts(url: string): { id: string; query: SignedLinkQuery } {
  const u = new URL(url);
  return {
    id: decodeURIComponent(u.pathname.split('/')[2]),
    query: { for: u.searchParams.get('for') ?? undefined, expires: u.searchParams.get('expires')!, sig: u.searchParams.get('sig')! },
  };
}

const user: LinkHolder = { userId: randomUUID(), keyId: null };
const keyed: LinkHolder = { userId: randomUUID(), keyId: randomUUID() };

describe('AttachmentUrls across a SECRETS_KEY rotation', () => {
  const now = new Date();
  const { id, query } = parts(urls(A).sign('att-1', user, now));

  it('verifies a link signed under the old key while that key is a fallback', () => {
    expect(urls(B, [A]).verify(id, query, now)).toEqual(user);
  });

  it('refuses it once the old key is gone, and refuses another id or a later expiry', () => {
    expect(urls(B).verify(id, query, now)).toBeNull();
    expect(urls(A).verify('att-2', query, now)).toBeNull();
    expect(urls(A).verify(id, { ...query, expires: String(Number(query.expires) + 1) }, now)).toBeNull();
  });

  it('signs new links under SECRETS_KEY only', () => {
    const fresh = parts(urls(B, [A]).sign('att-1', user, now));
    expect(urls(B).verify(fresh.id, fresh.query, now)).toEqual(user);
    expect(urls(A).verify(fresh.id, fresh.query, now)).toBeNull();
  });
});

describe('AttachmentUrls carry whom the link was minted for', () => {
  const now = new Date();

  it('gives back the user, and the key when minted through one, in a short `for`', () => {
    const plain = parts(urls(A).sign('att-1', user, now));
    expect(plain.query.for).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(urls(A).verify(plain.id, plain.query, now)).toEqual(user);
    const withKey = parts(urls(A).sign('att-1', keyed, now));
    expect(withKey.query.for).toMatch(/^[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{22}$/);
    expect(urls(A).verify(withKey.id, withKey.query, now)).toEqual(keyed);
  });

  it('refuses a link whose holder was changed, dropped or given another key', () => {
    const { id, query } = parts(urls(A).sign('att-1', keyed, now));
    const [userPart, keyPart] = query.for!.split('.');
    const other = parts(urls(A).sign('att-1', { userId: randomUUID(), keyId: randomUUID() }, now)).query.for!.split('.');
    expect(urls(A).verify(id, { ...query, for: userPart }, now)).toBeNull(); // the key dropped
    expect(urls(A).verify(id, { ...query, for: `${other[0]}.${keyPart}` }, now)).toBeNull(); // another user
    expect(urls(A).verify(id, { ...query, for: `${userPart}.${other[1]}` }, now)).toBeNull(); // another key
    expect(urls(A).verify(id, { ...query, for: undefined }, now)).toBeNull();
    expect(urls(A).verify(id, { ...query, for: `${userPart}.${keyPart}.${keyPart}` }, now)).toBeNull();
  });

  it('refuses a link of the earlier form (no holder, signed over the id and expiry alone)', () => {
    const { id, query } = parts(urls(A).sign('att-1', user, now));
    expect(urls(A).verify(id, { expires: query.expires, sig: query.sig }, now)).toBeNull();
  });

  it('accepts only the one encoding of each id', () => {
    const { id, query } = parts(urls(A).sign('att-1', user, now));
    const last = query.for!.at(-1)!;
    // base64url's 22nd character carries 2 of the id's bits and 4 spare ones: set a spare bit.
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const variant = query.for!.slice(0, 21) + alphabet[alphabet.indexOf(last) | 1];
    expect(variant).not.toBe(query.for);
    expect(urls(A).verify(id, { ...query, for: variant }, now)).toBeNull();
  });
});
