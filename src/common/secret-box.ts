import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';

/** Opened secrets kept in memory (every delivery attempt signs with its endpoint's secret). */
const OPENED_CACHE_SIZE = 10_000;

/** The id of a key: public, stable, and says nothing of the key (an HMAC under it). */
export function secretsKeyId(key: Buffer): string {
  return createHmac('sha256', key).update('messaging-sync secret-box key id').digest().subarray(0, 6).toString('base64url');
}

/** A sealed value that no configured key opens: named by the key id it was sealed under, when it has one. */
export class SecretKeyUnavailableError extends Error {
  constructor(readonly keyId: string | null) {
    super(
      keyId
        ? `a stored secret was sealed under key id ${keyId}, which is neither SECRETS_KEY nor one of SECRETS_KEY_FALLBACKS`
        : 'a stored secret cannot be opened with SECRETS_KEY or any of SECRETS_KEY_FALLBACKS',
    );
    this.name = 'SecretKeyUnavailableError';
  }
}

interface Key {
  id: string;
  key: Buffer;
}

/**
 * Secrets that must be used in plain form later (webhook signing secrets) are stored encrypted
 * with AES-256-GCM. Sealed form: `v2.<key id>.<iv>.<tag>.<ciphertext>` (base64url parts), sealed
 * under SECRETS_KEY; SECRETS_KEY_FALLBACKS open but never seal, which is how the key is rotated
 * without downtime (docs/operations.md). Values of the first format, `v1.<iv>.<tag>.<ciphertext>`,
 * carry no key id: every configured key is tried.
 */
@Injectable()
export class SecretBox {
  /** Sealed text to plain text; a sealed value never changes meaning, so entries never go stale. */
  private readonly opened = new Map<string, string>();
  private readonly current: Key;
  private readonly keys: Key[];

  constructor(@Inject(APP_CONFIG) config: Pick<AppConfig, 'secretsKey' | 'secretsKeyFallbacks'>) {
    this.current = { id: secretsKeyId(config.secretsKey), key: config.secretsKey };
    this.keys = [this.current, ...config.secretsKeyFallbacks.map((key) => ({ id: secretsKeyId(key), key }))];
  }

  /** The id of SECRETS_KEY: sealed values carrying another id are re-sealed by a rotation. */
  get currentKeyId(): string {
    return this.current.id;
  }

  seal(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.current.key, iv);
    const ciphertext = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return ['v2', this.current.id, ...[iv, cipher.getAuthTag(), ciphertext].map((part) => part.toString('base64url'))].join('.');
  }

  /** The plain text; throws SecretKeyUnavailableError when no configured key opens it. */
  open(sealed: string): string {
    let plain = this.opened.get(sealed);
    if (plain === undefined) {
      plain = this.decrypt(sealed);
      if (this.opened.size >= OPENED_CACHE_SIZE) this.opened.delete(this.opened.keys().next().value!);
      this.opened.set(sealed, plain);
    }
    return plain;
  }

  /** The key id a sealed value names (null for the first format, which names none). */
  static keyIdOf(sealed: string): string | null {
    return sealed.startsWith('v2.') ? (sealed.split('.')[1] ?? null) : null;
  }

  private decrypt(sealed: string): string {
    const parts = sealed.split('.');
    if (parts[0] === 'v2' && parts.length === 5) {
      const key = this.keys.find((k) => k.id === parts[1]);
      if (!key) throw new SecretKeyUnavailableError(parts[1]);
      return open(key.key, parts[2], parts[3], parts[4]);
    }
    if (parts[0] === 'v1' && parts.length === 4) {
      for (const { key } of this.keys) {
        try {
          return open(key, parts[1], parts[2], parts[3]);
        } catch {
          // the GCM tag does not match under this key: try the next one
        }
      }
      throw new SecretKeyUnavailableError(null);
    }
    throw new Error('sealed secret has an unknown format');
  }
}

function open(key: Buffer, iv: string, tag: string, ciphertext: string): string {
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
}
