import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';

const VERSION = 'v1';

/** Opened secrets kept in memory (every delivery attempt signs with its endpoint's secret). */
const OPENED_CACHE_SIZE = 10_000;

/**
 * Secrets that must be used in plain form later (webhook signing secrets) are stored encrypted
 * with AES-256-GCM under SECRETS_KEY: `v1.<iv>.<tag>.<ciphertext>`, each part base64url.
 */
@Injectable()
export class SecretBox {
  /** Sealed text to plain text; a sealed value never changes meaning, so entries never go stale. */
  private readonly opened = new Map<string, string>();

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  seal(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.config.secretsKey, iv);
    const ciphertext = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return [VERSION, iv, cipher.getAuthTag(), ciphertext].map((part) => (typeof part === 'string' ? part : part.toString('base64url'))).join('.');
  }

  open(sealed: string): string {
    let plain = this.opened.get(sealed);
    if (plain === undefined) {
      plain = this.decrypt(sealed);
      if (this.opened.size >= OPENED_CACHE_SIZE) this.opened.delete(this.opened.keys().next().value!);
      this.opened.set(sealed, plain);
    }
    return plain;
  }

  private decrypt(sealed: string): string {
    const [version, iv, tag, ciphertext] = sealed.split('.');
    if (version !== VERSION || !iv || !tag || ciphertext === undefined) throw new Error('sealed secret has an unknown format');
    const decipher = createDecipheriv('aes-256-gcm', this.config.secretsKey, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
  }
}
