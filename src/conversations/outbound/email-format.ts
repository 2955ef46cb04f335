import { randomUUID } from 'node:crypto';

/** A new Message-ID, `<uuid@domain>`, on the sending address's domain (RFC 5322 §3.6.4). */
export function newMessageId(fromAddress: string): string {
  const domain = fromAddress.slice(fromAddress.lastIndexOf('@') + 1) || 'localhost';
  return `<${randomUUID()}@${domain}>`;
}

/** `Re: <subject>`, without stacking a second `Re:`. */
export function replySubject(subject: string | null): string | null {
  if (!subject) return null;
  return /^\s*re\s*:/i.test(subject) ? subject : `Re: ${subject}`;
}

/** Most Message-IDs kept in References: the first (thread root) and the latest ones. */
const MAX_REFERENCES = 30;

/**
 * The References of a reply (RFC 5322 §3.6.4): the parent's References (or, without them, its
 * single In-Reply-To), then the parent's own Message-ID.
 */
export function replyReferences(parent: { messageId: string; references: string[]; inReplyTo: string | null }): string[] {
  const before = parent.references.length > 0 ? parent.references : parent.inReplyTo ? [parent.inReplyTo] : [];
  const all = [...new Set([...before, parent.messageId])];
  return all.length <= MAX_REFERENCES ? all : [all[0], ...all.slice(all.length - (MAX_REFERENCES - 1))];
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** The HTML alternative of a plain-text body, with the 1×1 open-tracking pixel at its end. */
export function trackedHtml(text: string, pixelUrl: string): string {
  const paragraphs = escapeHtml(text).replace(/\r?\n/g, '<br>\n');
  return (
    '<!DOCTYPE html>\n<html><head><meta charset="utf-8"></head><body>\n' +
    `<div>${paragraphs}</div>\n` +
    `<img src="${escapeHtml(pixelUrl)}" width="1" height="1" alt="" style="display:block;width:1px;height:1px;border:0">\n` +
    '</body></html>\n'
  );
}

/** The address of a message's open-tracking pixel. */
export function pixelUrl(publicBaseUrl: string, token: string): string {
  return `${publicBaseUrl}/t/o/${token}`;
}
