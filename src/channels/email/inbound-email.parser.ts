import { createHash } from 'node:crypto';
import { AddressObject, HeaderLines, ParsedMail, simpleParser } from 'mailparser';
import { ValidationError } from '../../common/errors';
import { HtmlTooDeepError, htmlToPlainText } from '../../common/html-text';
import { wellFormedCopy, wellFormedText } from '../../common/well-formed';

export interface ParsedInboundEmail {
  /** Lower-case addresses from To, then Cc, then Delivered-To, in header order, without repeats. */
  recipients: string[];
  from: { address: string; displayName: string | null };
  subject: string | null;
  text: string;
  html: string | null;
  messageId: string | null;
  inReplyTo: string | null;
  references: string[];
  listUnsubscribe: string | null;
  authentication: AuthenticationResults;
  /** Message-ID, or `sha256:<hex of the raw message>` when it has none: a repeat creates nothing. */
  providerMessageId: string;
  attachments: Array<{ filename: string; contentType: string; content: Buffer }>;
}

export interface AuthenticationResults {
  spf: string | null;
  dkim: string | null;
  dmarc: string | null;
}

const MESSAGE_ID = /<[^<>\s]+>/g;
/**
 * Longest Message-ID kept (RFC 5322's line limit). A longer one is treated as absent: it could not
 * be indexed (PostgreSQL's B-tree rows stop near 2.7 KB), and one message a sender crafted that
 * way must not stop a mailbox's sync or fail the inbound route.
 */
const MAX_MESSAGE_ID = 998;

/**
 * Longest sender display name kept, in code points: as long as a contact's display name may be.
 * The name shows wherever the sender does (threads, contacts, events); a sender must not make it
 * a page long.
 */
const MAX_DISPLAY_NAME = 200;

/**
 * Longest From address taken: RFC 5321's (a path of 256 octets, with its angle brackets). The
 * address is the sender's identity, shown wherever the sender is and never cut (a cut address
 * would be someone else's), so a longer one, which no mail server could answer, is refused.
 */
const MAX_ADDRESS = 254;

/**
 * Parses a raw RFC 5322 message with mailparser. A body that is not a message (no From address,
 * no recipient at all) is refused with a ValidationError that names the problem. A message is
 * never refused for its text: every string of the result (body, HTML, subject, names, filenames,
 * header values) has U+0000 removed and lone surrogates replaced by U+FFFD, however they came in
 * (raw bytes, quoted-printable `=00`, base64, encoded-words, RFC 2231 parameters, UTF-16 parts).
 */
export async function parseInboundEmail(raw: Buffer, options: { requireRecipient?: boolean } = {}): Promise<ParsedInboundEmail> {
  if (raw.length === 0) throw new ValidationError('the request body is empty: send the raw RFC 5322 message');
  let mail: ParsedMail;
  try {
    // cid: links stay as they are: the parts are stored as attachments, not inlined into the HTML.
    // HTML becomes text here (bodyText), as HTML attachments do, not with mailparser's own options.
    mail = await simpleParser(raw, { keepCidLinks: true, skipTextToHtml: true, skipHtmlToText: true });
  } catch (error) {
    throw new ValidationError(`the message could not be parsed: ${(error as Error).message}`);
  }
  if (mail.headerLines.length === 0) throw new ValidationError('the body is not an RFC 5322 message: it has no header section');
  const from = addresses(mail.from)[0];
  if (!from?.address) throw new ValidationError('the message has no From address', 'from');
  if (from.address.length > MAX_ADDRESS) {
    throw new ValidationError(
      `the From address is ${from.address.length} characters long, more than the ${MAX_ADDRESS} an address may have (RFC 5321)`,
      'from',
    );
  }
  const recipients = unique(
    [...addresses(mail.to), ...addresses(mail.cc), ...addresses(mail.headers.get('delivered-to') as AddressObject | AddressObject[] | undefined)].map((a) =>
      a.address!.toLowerCase(),
    ),
  );
  // A mailbox's sync knows the line whatever the headers say (Bcc-only mail has no recipient in them).
  if (recipients.length === 0 && options.requireRecipient !== false) {
    throw new ValidationError('the message has no recipient: no To, Cc or Delivered-To address', 'to');
  }

  const messageId = keptId(wellFormedText(mail.messageId ?? '').trim() || undefined);
  return wellFormedCopy<ParsedInboundEmail>({
    recipients,
    from: {
      address: from.address.toLowerCase(),
      displayName:
        Array.from(wellFormedText(from.name ?? '').trim())
          .slice(0, MAX_DISPLAY_NAME)
          .join('')
          .trim() || null,
    },
    subject: mail.subject ?? null,
    text: bodyText(mail),
    html: typeof mail.html === 'string' && mail.html.length > 0 ? mail.html : null,
    messageId,
    inReplyTo: keptId((mail.inReplyTo ?? '').match(MESSAGE_ID)?.[0]),
    references: referenceIds(mail.references),
    listUnsubscribe: rawHeader(mail.headerLines, 'list-unsubscribe'),
    authentication: parseAuthenticationResults(rawHeader(mail.headerLines, 'authentication-results')),
    providerMessageId: messageId ?? `sha256:${createHash('sha256').update(raw).digest('hex')}`,
    attachments: mail.attachments
      .filter((a) => a.content.length > 0)
      .map((a, i) => ({ filename: wellFormedText(a.filename ?? '').trim() || `attachment-${i + 1}`, contentType: a.contentType, content: a.content })),
  });
}

/**
 * The text of the body: its text/plain part(s), else its HTML as plain text, converted like an
 * HTML attachment (common/html-text.ts). HTML nested too deep to convert leaves the text empty;
 * the HTML is kept.
 */
function bodyText(mail: ParsedMail): string {
  if (mail.text?.trim()) return mail.text;
  if (typeof mail.html !== 'string' || mail.html.length === 0) return '';
  try {
    return htmlToPlainText(mail.html);
  } catch (error) {
    if (error instanceof HtmlTooDeepError) return '';
    throw error;
  }
}

/**
 * SPF, DKIM and DMARC results of an Authentication-Results header (RFC 8601), e.g.
 * `mx.example.net; spf=pass smtp.mailfrom=a.example; dkim=pass header.d=a.example; dmarc=pass`.
 * Comments are dropped; with several DKIM signatures, `pass` wins if any passed, else the first
 * result. A method the header does not mention is null.
 */
export function parseAuthenticationResults(header: string | null): AuthenticationResults {
  const found: Record<'spf' | 'dkim' | 'dmarc', string[]> = { spf: [], dkim: [], dmarc: [] };
  if (header) {
    const [, ...results] = stripComments(header).split(';');
    for (const result of results) {
      const match = /^\s*(spf|dkim|dmarc)\s*=\s*([a-z]+)/i.exec(result);
      if (match) found[match[1].toLowerCase() as 'spf' | 'dkim' | 'dmarc'].push(match[2].toLowerCase());
    }
  }
  const pick = (values: string[]) => (values.includes('pass') ? 'pass' : (values[0] ?? null));
  return { spf: pick(found.spf), dkim: pick(found.dkim), dmarc: pick(found.dmarc) };
}

/**
 * The unfolded value of the first (topmost) header with that name. For Authentication-Results the
 * topmost is the one the receiving mail server added last, the one to trust.
 */
function rawHeader(lines: HeaderLines, name: string): string | null {
  const line = lines.find((l) => l.key === name)?.line;
  if (line === undefined) return null;
  const value = line
    .slice(line.indexOf(':') + 1)
    .replace(/\r?\n[ \t]+/g, ' ')
    .trim();
  return value.length > 0 ? value : null;
}

function stripComments(value: string): string {
  let previous: string;
  let current = value;
  do {
    previous = current;
    current = current.replace(/\([^()]*\)/g, ' ');
  } while (current !== previous);
  return current;
}

function addresses(header: AddressObject | AddressObject[] | undefined): Array<{ address?: string; name: string }> {
  const objects = header === undefined ? [] : Array.isArray(header) ? header : [header];
  const flat = (
    list: Array<{ address?: string; name: string; group?: Array<{ address?: string; name: string }> }>,
  ): Array<{ address?: string; name: string }> => list.flatMap((a) => (a.group ? flat(a.group) : [a]));
  return flat(objects.flatMap((o) => o.value ?? [])).filter((a) => !!a.address);
}

function referenceIds(references: string | string[] | undefined): string[] {
  const values = references === undefined ? [] : Array.isArray(references) ? references : [references];
  return unique(values.flatMap((v) => v.match(MESSAGE_ID) ?? [])).filter((id) => id.length <= MAX_MESSAGE_ID);
}

function keptId(id: string | undefined): string | null {
  return id !== undefined && id.length <= MAX_MESSAGE_ID ? id : null;
}

function unique(values: string[]): string[] {
  return [...new Set(values)];
}
