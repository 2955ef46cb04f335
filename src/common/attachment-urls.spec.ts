import { randomBytes } from 'node:crypto';
import { AppConfig } from '../config/app-config';
import { AttachmentUrls } from './attachment-urls';

const A = randomBytes(32);
const B = randomBytes(32);
const urls = (secretsKey: Buffer, secretsKeyFallbacks: Buffer[] = []) =>
  new AttachmentUrls({ secretsKey, secretsKeyFallbacks, publicBaseUrl: 'https://sync.example.com' } as AppConfig);

function parts(url: string): { id: string; expires: string; sig: string } {
  const u = new URL(url);
  return { id: decodeURIComponent(u.pathname.split('/')[2]), expires: u.searchParams.get('expires')!, sig: u.searchParams.get('sig')! };
}

describe('AttachmentUrls across a SECRETS_KEY rotation', () => {
  const now = new Date();
  const { id, expires, sig } = parts(urls(A).sign('att-1', now));

  it('verifies a link signed under the old key while that key is a fallback', () => {
    expect(urls(B, [A]).verify(id, expires, sig, now)).toBe(true);
  });

  it('refuses it once the old key is gone, and refuses another id or a later expiry', () => {
    expect(urls(B).verify(id, expires, sig, now)).toBe(false);
    expect(urls(A).verify('att-2', expires, sig, now)).toBe(false);
    expect(urls(A).verify(id, String(Number(expires) + 1), sig, now)).toBe(false);
  });

  it('signs new links under SECRETS_KEY only', () => {
    const fresh = parts(urls(B, [A]).sign('att-1', now));
    expect(urls(B).verify(fresh.id, fresh.expires, fresh.sig, now)).toBe(true);
    expect(urls(A).verify(fresh.id, fresh.expires, fresh.sig, now)).toBe(false);
  });
});
