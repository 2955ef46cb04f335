import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';

/** Attachment download links are valid this long (spec: Limits). */
export const ATTACHMENT_URL_VALIDITY_MS = 60 * 60 * 1000;

/**
 * Signed attachment download URLs: `<PUBLIC_BASE_URL>/attachments/<id>/download?expires=<unix>&sig=<hex>`,
 * HMAC-SHA256 under a key derived from SECRETS_KEY (links signed before a key rotation stay valid while
 * the old key is among SECRETS_KEY_FALLBACKS). The delivery engine signs, the download route verifies.
 */
@Injectable()
export class AttachmentUrls {
  /** Derived from SECRETS_KEY (signs) and from each of SECRETS_KEY_FALLBACKS (still verify during a key rotation). */
  private readonly keys: Buffer[];

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    this.keys = [config.secretsKey, ...config.secretsKeyFallbacks].map((key) =>
      Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), 'attachment-download-urls', 32)),
    );
  }

  sign(attachmentId: string, now: Date): string {
    const expires = Math.floor((now.getTime() + ATTACHMENT_URL_VALIDITY_MS) / 1000);
    return `${this.config.publicBaseUrl}/attachments/${encodeURIComponent(attachmentId)}/download?expires=${expires}&sig=${this.digest(this.keys[0], attachmentId, expires)}`;
  }

  verify(attachmentId: string, expires: string | undefined, sig: string | undefined, now: Date): boolean {
    if (!expires || !/^\d{1,12}$/.test(expires) || !sig || !/^[0-9a-f]{64}$/.test(sig)) return false;
    if (Number(expires) * 1000 < now.getTime()) return false;
    const given = Buffer.from(sig, 'hex');
    return this.keys.some((key) => timingSafeEqual(given, Buffer.from(this.digest(key, attachmentId, Number(expires)), 'hex')));
  }

  private digest(key: Buffer, attachmentId: string, expires: number): string {
    return createHmac('sha256', key).update(`${attachmentId}.${expires}`).digest('hex');
  }
}
