import { createCipheriv, randomBytes } from 'node:crypto';
import { SecretBox, SecretKeyUnavailableError, secretsKeyId } from './secret-box';

const A = randomBytes(32);
const B = randomBytes(32);

/** The first sealed format, as stored before key ids existed: `v1.<iv>.<tag>.<ciphertext>`. */
function sealV1(key: Buffer, plain: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const ciphertext = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return ['v1', iv, cipher.getAuthTag(), ciphertext].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join('.');
}

describe('SecretBox', () => {
  it('seals under SECRETS_KEY with its key id, and opens what it sealed', () => {
    const box = new SecretBox({ secretsKey: A, secretsKeyFallbacks: [] });
    const sealed = box.seal('whsec-plain');
    expect(sealed).toMatch(/^v2\.[A-Za-z0-9_-]{8}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(SecretBox.keyIdOf(sealed)).toBe(secretsKeyId(A));
    expect(box.currentKeyId).toBe(secretsKeyId(A));
    expect(sealed).not.toContain('whsec-plain');
    expect(box.open(sealed)).toBe('whsec-plain');
  });

  it('gives each key its own id, which reveals nothing of the key', () => {
    expect(secretsKeyId(A)).not.toBe(secretsKeyId(B));
    expect(secretsKeyId(A)).toBe(secretsKeyId(Buffer.from(A)));
    expect(A.toString('hex')).not.toContain(Buffer.from(secretsKeyId(A), 'base64url').toString('hex'));
  });

  it('opens values sealed under a fallback key, and seals new ones under SECRETS_KEY only', () => {
    const old = new SecretBox({ secretsKey: A, secretsKeyFallbacks: [] });
    const sealedUnderA = old.seal('s1');
    const rotated = new SecretBox({ secretsKey: B, secretsKeyFallbacks: [A] });
    expect(rotated.open(sealedUnderA)).toBe('s1');
    expect(SecretBox.keyIdOf(rotated.seal('s2'))).toBe(secretsKeyId(B));
  });

  it('names the key id of a value no configured key opens', () => {
    const sealedUnderA = new SecretBox({ secretsKey: A, secretsKeyFallbacks: [] }).seal('s1');
    const other = new SecretBox({ secretsKey: B, secretsKeyFallbacks: [] });
    expect(() => other.open(sealedUnderA)).toThrow(SecretKeyUnavailableError);
    expect(() => other.open(sealedUnderA)).toThrow(`key id ${secretsKeyId(A)}`);
  });

  it('opens values of the first format with SECRETS_KEY or a fallback, and refuses them under any other key', () => {
    const legacy = sealV1(A, 'legacy-secret');
    expect(new SecretBox({ secretsKey: A, secretsKeyFallbacks: [] }).open(legacy)).toBe('legacy-secret');
    expect(new SecretBox({ secretsKey: B, secretsKeyFallbacks: [A] }).open(legacy)).toBe('legacy-secret');
    expect(() => new SecretBox({ secretsKey: B, secretsKeyFallbacks: [] }).open(legacy)).toThrow(SecretKeyUnavailableError);
  });

  it('refuses a tampered value', () => {
    const box = new SecretBox({ secretsKey: A, secretsKeyFallbacks: [] });
    const parts = box.seal('abc').split('.');
    const ciphertext = Buffer.from(parts[4], 'base64url');
    ciphertext[0] ^= 1;
    parts[4] = ciphertext.toString('base64url');
    expect(() => box.open(parts.join('.'))).toThrow();
    expect(() => box.open('v9.x.y')).toThrow('unknown format');
  });
});
