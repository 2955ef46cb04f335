import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { LOWERCASE_UUID_PATTERN } from './uuid';

/** Attachment download links are valid this long (spec: Limits). */
export const ATTACHMENT_URL_VALIDITY_MS = 60 * 60 * 1000;

/**
 * Whom a download link was minted for: the user, and the API key when it was minted through one
 * (read_attachment called with a key); keyId null for a web session or a webhook (the endpoint's
 * owner). The download serves the file only while this holder may still see the attachment's line.
 */
export interface LinkHolder {
  userId: string;
  keyId: string | null;
}

/** A download link's query parameters, as the request gave them. */
export interface SignedLinkQuery {
  for?: string;
  expires?: string;
  sig?: string;
}

/** `for`: the user id, then `.` and the key id when minted through a key; each UUID as 22 base64url characters. */
const HOLDER = /^([A-Za-z0-9_-]{22})(?:\.([A-Za-z0-9_-]{22}))?$/;

/**
 * Signed attachment download URLs:
 * `<PUBLIC_BASE_URL>/attachments/<id>/download?for=<user>[.<key>]&expires=<unix>&sig=<hex>`,
 * HMAC-SHA256 over the id, the holder and the expiry, under a key derived from SECRETS_KEY (links
 * signed before a key rotation stay valid while the old key is among SECRETS_KEY_FALLBACKS). The
 * delivery engine and read_attachment sign, the download route verifies, then checks the holder's
 * live access (AttachmentsService.download). A link of the earlier form (no `for`, signed over the
 * id and expiry alone) is refused as invalid: it names no holder whose access could be checked.
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

  sign(attachmentId: string, holder: LinkHolder, now: Date): string {
    const expires = Math.floor((now.getTime() + ATTACHMENT_URL_VALIDITY_MS) / 1000);
    const forParam = holder.keyId === null ? compact(holder.userId) : `${compact(holder.userId)}.${compact(holder.keyId)}`;
    return (
      `${this.config.publicBaseUrl}/attachments/${encodeURIComponent(attachmentId)}/download` +
      `?for=${forParam}&expires=${expires}&sig=${this.digest(this.keys[0], attachmentId, holder, expires)}`
    );
  }

  /**
   * An event's `data` with a download link signed for `holder` on each of its `attachments` (the
   * verbose payload's; other data as given): valid 1 hour from `now`. The one place event payloads
   * get their links: the delivery engine (for the endpoint's owner, at every attempt) and the event
   * feed (for the caller, at every read).
   */
  withSignedLinks<T extends object>(data: T, holder: LinkHolder, now: Date): T {
    const attachments = (data as { attachments?: unknown }).attachments;
    if (!Array.isArray(attachments)) return data;
    return { ...data, attachments: attachments.map((a: { id: string }) => ({ ...a, url: this.sign(a.id, holder, now) })) };
  }

  /** The holder the link was minted for, if its signature is good and it has not expired; else null. */
  verify(attachmentId: string, query: SignedLinkQuery, now: Date): LinkHolder | null {
    const { expires, sig } = query;
    if (!expires || !/^\d{1,12}$/.test(expires) || !sig || !/^[0-9a-f]{64}$/.test(sig)) return null;
    if (Number(expires) * 1000 < now.getTime()) return null;
    const holder = parseHolder(query.for);
    if (!holder) return null;
    const given = Buffer.from(sig, 'hex');
    const good = this.keys.some((key) => timingSafeEqual(given, Buffer.from(this.digest(key, attachmentId, holder, Number(expires)), 'hex')));
    return good ? holder : null;
  }

  private digest(key: Buffer, attachmentId: string, holder: LinkHolder, expires: number): string {
    // A JSON array: no field can run into the next, and the version keeps these apart from the earlier `<id>.<expires>` form.
    return createHmac('sha256', key)
      .update(JSON.stringify(['v2', attachmentId, holder.userId, holder.keyId, expires]))
      .digest('hex');
  }
}

/** A UUID as 22 base64url characters (its 16 bytes). */
function compact(uuid: string): string {
  if (!LOWERCASE_UUID_PATTERN.test(uuid)) throw new Error(`not a lowercase UUID: ${uuid}`);
  return Buffer.from(uuid.replace(/-/g, ''), 'hex').toString('base64url');
}

function uuidOf(compacted: string): string | null {
  const hex = Buffer.from(compacted, 'base64url').toString('hex');
  const uuid = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  // Only the one encoding of each id (the last character's spare bits zero).
  return LOWERCASE_UUID_PATTERN.test(uuid) && compact(uuid) === compacted ? uuid : null;
}

function parseHolder(value: string | undefined): LinkHolder | null {
  const match = value === undefined ? null : HOLDER.exec(value);
  if (!match) return null;
  const userId = uuidOf(match[1]);
  const keyId = match[2] === undefined ? null : uuidOf(match[2]);
  if (userId === null || (match[2] !== undefined && keyId === null)) return null;
  return { userId, keyId };
}
