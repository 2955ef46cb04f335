import { ValidationError } from './errors';

/**
 * How much text the read tools put in one result (docs/mcp.md, "Result sizes"): bounded by
 * default, so a result fits in an agent's context whatever the mail holds; the arguments that
 * raise a bound have a ceiling too. Lengths are in Unicode code points, as PostgreSQL counts them.
 */
export const RESULT_BOUNDS = {
  /** list_threads: the last message's preview, whitespace folded. */
  previewChars: 200,
  /** list_contacts: characters of each contact's notes (get_contact gives them whole). */
  contactNotesChars: 500,
  /** get_thread: messages per page, by default and at most. */
  threadMessages: 20,
  maxThreadMessages: 50,
  /** get_thread: characters of each message body, by default and at most. */
  bodyChars: 2_000,
  maxBodyChars: 100_000,
  /** An email subject in list_threads, get_thread, get_message and search_messages: cut as events cut it (RFC 5322's longest line). */
  subjectChars: 998,
  /** get_thread: attachments listed per message (attachmentCount gives them all), their filename and mimeType cut to this many characters. */
  threadAttachments: 5,
  threadAttachmentNameChars: 100,
  /** get_message: attachments listed (as events list them), filename and mimeType cut as events cut them. */
  messageAttachments: 100,
  messageAttachmentNameChars: 255,
  /** get_message: characters of the body per call, by default and at most. */
  messageChars: 20_000,
  maxMessageChars: 100_000,
  /** read_attachment: characters of extracted text per call, by default and at most. */
  attachmentChars: 20_000,
  maxAttachmentChars: 100_000,
  /** read_attachment: calendar events listed (the text has them all), and attendees of each. */
  calendarEvents: 20,
  attendeesPerEvent: 50,
  /** The largest offset a windowed read takes (far past any stored text; keeps the SQL's integers in range). */
  maxOffset: 100_000_000,
  /** get_webhook_delivery: the envelope comes whole when its JSON text is at most this long; longer, a window of its text at a time. */
  envelopeChars: 50_000,
  /** get_webhook_delivery: characters of a long envelope's JSON text per call, by default and at most. */
  envelopeTextChars: 20_000,
  maxEnvelopeTextChars: 100_000,
  /** search_messages: hits per page (fixed), and the query's length. */
  searchHits: 20,
  searchQueryChars: 500,
  /** search_messages: of the matches a search may see, the newest this many are ranked (docs/mcp.md, "Searching messages"). */
  searchRankedMatches: 1_000,
  /**
   * search_messages: the newest messages of the org searched first (then a window about ten times
   * as long, then all): a common word's newest matches are found without reading all of its matches.
   */
  searchWindowMessages: 10_000,
  /** search_messages: characters of a body or of an attachment's text that are indexed (and searched) from the start. */
  searchableChars: 100_000,
  /** search_messages: a hit's snippet (ts_headline: words per fragment, fragments), then cut to snippetChars, whitespace folded. */
  snippetMaxWords: 30,
  snippetMinWords: 10,
  snippetFragments: 2,
  snippetChars: 400,
  /** The JSON text of any result with default arguments, for ordinary text (characters JSON escapes count more than once). */
  resultChars: 100_000,
} as const;

/**
 * A one-line preview of a body: runs of whitespace folded to one space, cut to
 * `RESULT_BOUNDS.previewChars` code points. `cut` says the body given was already shortened.
 */
export function previewOf(body: string, cut: boolean): { preview: string; truncated: boolean } {
  // Unicode's White_Space, not JavaScript's \s, which also takes U+FEFF (an invisible character visible-text removes).
  const folded = body.replace(/\p{White_Space}+/gu, ' ').trim();
  // No more UTF-16 units than the bound: no more code points either, nothing to cut (most previews).
  if (folded.length <= RESULT_BOUNDS.previewChars) return { preview: folded, truncated: cut };
  const points = Array.from(folded.slice(0, RESULT_BOUNDS.previewChars * 2));
  if (points.length <= RESULT_BOUNDS.previewChars && folded.length <= RESULT_BOUNDS.previewChars * 2) return { preview: folded, truncated: cut };
  return { preview: points.slice(0, RESULT_BOUNDS.previewChars).join(''), truncated: true };
}

/** The `offset` and `maxChars` arguments of a tool that reads a long text a window at a time (`what`: "body", "text"). */
export function textWindowArguments<M extends number>(what: string, defaultChars: number, maxChars: M) {
  return {
    offset: {
      type: 'integer',
      minimum: 0,
      maximum: RESULT_BOUNDS.maxOffset,
      description: `Where to start reading the ${what}, in characters: 0 (the default), or the nextOffset of the previous call.`,
    },
    maxChars: { type: 'integer', minimum: 1, maximum: maxChars, description: `At most this many characters of ${what}. Default ${defaultChars}.` },
  } as const;
}

/**
 * How many characters `text` has, in Unicode code points: as the tools' input schemas count a
 * `maxLength` (Ajv), and PostgreSQL's length(). Every rule that bounds a text in characters counts
 * with this, so an emoji is one character everywhere, never the two UTF-16 units `.length` sees.
 */
export function charLength(text: string): number {
  let pairs = 0;
  for (let i = 1; i < text.length; i++) {
    const low = text.charCodeAt(i);
    if (low >= 0xdc00 && low <= 0xdfff) {
      const high = text.charCodeAt(i - 1);
      if (high >= 0xd800 && high <= 0xdbff) pairs += 1;
    }
  }
  return text.length - pairs;
}

/**
 * `maxChars` characters of `text` from `offset`, and the whole text's length, in Unicode code
 * points as PostgreSQL's left() and length() count them: for a text already in memory.
 */
export function textWindow(text: string, offset: number, maxChars: number): { window: string; length: number } {
  const points = Array.from(text);
  return { window: points.slice(offset, offset + maxChars).join(''), length: points.length };
}

/**
 * Where the window after this one starts, reading `maxChars` from `offset` of a text `length`
 * long (null at the end); an offset past the end is the caller's mistake. `length` is named as the
 * result names it (`textLength`, `bodyLength`).
 */
export function nextOffsetOf(window: { offset: number; maxChars: number }, length: { of: string; name: string; value: number }): number | null {
  const { offset, maxChars } = window;
  if (offset > length.value) throw new ValidationError(`offset ${offset} is past the end of the ${length.of} (${length.name} ${length.value})`, 'offset');
  return offset + maxChars < length.value ? offset + maxChars : null;
}
