import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Principal } from '../../identity/principal';
import { ValidationError } from '../../common/errors';
import { KeysetCursors } from '../../common/keyset-cursor';
import { Channel, Direction, IdentityKind } from '../conversation-vocabulary';
import { serializeMessage } from '../message-data.builder';
import { ThreadAccessRepository } from '../threads/thread-access.repository';
import { RESULT_BOUNDS } from '../../common/result-bounds';
import { SearchFilter, SearchHitRow, SearchRepository, SnippetMarks } from './search.repository';

export interface SearchArgs {
  query: string;
  threadId?: string;
  channel?: Channel;
  since?: string;
  cursor?: string;
}

export interface SearchHit {
  messageId: string;
  threadId: string;
  channel: Channel;
  direction: Direction;
  status: string;
  createdAt: string;
  sentAt: string | null;
  fromIdentity: { value: string; kind: IdentityKind };
  toIdentity: { value: string; kind: IdentityKind };
  subject: string | null;
  person: { id: string | null; displayName: string | null };
  matchedIn: 'body' | 'attachment';
  attachment: { id: string; filename: string } | null;
  snippet: string;
  rank: number;
}

/** search_messages' snippets: each matched word in **double asterisks** (the tool's output schema says so). */
export const TOOL_SNIPPET_MARKS: SnippetMarks = { start: '**', stop: '**' };

/** A rank as PostgreSQL writes a real: 0.0607927, 1e-20, 6.07927e-05. */
const RANK_TEXT = /^\d+(\.\d+)?(e[-+]?\d+)?$/;
const DIGEST_CHARS = 16;
/** Matches (in RESULT_BOUNDS.searchRankedMatches) a search reads in full rather than through a second window. */
const ALL_AT_MOST = 10;

/**
 * search_messages: full-text search of the bodies (and subjects) of messages and of attachments'
 * names and extracted text, on threads the caller may use, best match first.
 *
 * Paging: the hits are ordered by (rank DESC, hit id DESC) and the cursor is the keyset position
 * of the last hit (its rank exactly as PostgreSQL wrote it, and its id), signed like every list
 * cursor (KeysetCursors), with a digest of the query and filters: a cursor only continues the
 * search it came from. A page never repeats or skips a hit of the previous ones while the data
 * stands still; a hit that appears later (new mail, an attachment extracted) shows on a later page
 * only if it ranks below the position reached.
 */
@Injectable()
export class SearchService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly search: SearchRepository,
    private readonly threadAccess: ThreadAccessRepository,
    private readonly cursors: KeysetCursors,
  ) {}

  /**
   * `marks` go around each matched word of the snippets: the tool's `**` by default; a surface
   * that must tell a mark from the same characters in the text (the web page, where a message's
   * own `**bold**` would read as a match) passes characters of its own.
   */
  async find(caller: Principal, args: SearchArgs, marks: SnippetMarks = TOOL_SNIPPET_MARKS): Promise<{ hits: SearchHit[]; nextCursor: string | null }> {
    const query = args.query.trim();
    if (query.length === 0) throw new ValidationError('query is blank: give at least one word to search for', 'query');
    const digest = searchDigest({ ...args, query });
    const after = args.cursor === undefined ? undefined : this.position(args.cursor, digest);
    const parsed = await this.search.parse(query);
    if (parsed.nodes === 0) throw new ValidationError(`query has no words to search for (only punctuation or symbols): ${JSON.stringify(query)}`, 'query');
    if (!parsed.searchable) throw new ValidationError('query only excludes words (-word): give at least one word the messages must contain', 'query');
    if (args.threadId !== undefined) await this.threadAccess.threadForCaller(this.dataSource.manager, caller, args.threadId);
    const limit = RESULT_BOUNDS.searchHits;
    const filter = { query, threadId: args.threadId, channel: args.channel, since: args.since, after, limit: limit + 1, marks };
    const rows = args.threadId === undefined ? await this.newestMatchesRanked(caller, filter) : await this.search.search(caller, filter);
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      hits: page.map(hitOf),
      nextCursor: rows.length > limit && last ? this.cursors.encode('search_messages', { key: `${last.rank}|${digest}`, id: last.hit_id }) : null,
    };
  }

  /**
   * The search over the org's newest matches. The ranked matches are the newest
   * RESULT_BOUNDS.searchRankedMatches (K) the caller may see, and when a recency window holds K
   * matches, they are all in it. So the org's newest searchWindowMessages messages are searched
   * first; a common word is answered there, reading about K of its matches instead of all of them.
   * Otherwise the first window's matches tell how common the word is: when all the mail holds
   * about ALL_AT_MOST × K matches or fewer at that rate (and when the first window held none),
   * everything is searched, which is cheap for such a word; otherwise a window long enough for
   * about twice K at that rate, and everything only if that one falls short too. Whichever step
   * answers, the hits are those of ranking the newest K matches of all the mail.
   */
  private async newestMatchesRanked(caller: Principal, filter: SearchFilter): Promise<SearchHitRow[]> {
    const ranked = RESULT_BOUNDS.searchRankedMatches;
    const enough = (rows: SearchHitRow[]) => rows.length > 0 && rows[0].candidate_count >= ranked;
    const { newest, windowStart, oldest } = await this.search.recency(caller, RESULT_BOUNDS.searchWindowMessages);
    if (newest === null || windowStart === null || oldest === null) return this.search.search(caller, filter);
    const first = await this.search.search(caller, { ...filter, windowStart });
    if (enough(first) || first.length === 0) return enough(first) ? first : this.search.search(caller, filter);
    const span = Math.max(newest.getTime() - windowStart.getTime(), 1);
    const perMs = first[0].candidate_count / span;
    if (perMs * (newest.getTime() - oldest.getTime()) <= ALL_AT_MOST * ranked) return this.search.search(caller, filter);
    const wider = new Date(newest.getTime() - (2 * ranked) / perMs);
    const second = await this.search.search(caller, { ...filter, windowStart: wider });
    return enough(second) ? second : this.search.search(caller, filter);
  }

  private position(cursor: string, digest: string): { rank: string; id: string } {
    const { key, id } = this.cursors.decode('search_messages', cursor, (k) => {
      const [rank, of, ...rest] = k.split('|');
      return rest.length === 0 && RANK_TEXT.test(rank) && of !== undefined && /^[0-9a-f]+$/.test(of);
    });
    const [rank, of] = key.split('|');
    if (of !== digest) throw new ValidationError('cursor belongs to another search: pass it with the same query, threadId, channel and since', 'cursor');
    return { rank, id };
  }
}

/** The query and filters a cursor continues (the query as searched, without surrounding spaces). */
function searchDigest(args: SearchArgs): string {
  const { query, threadId = null, channel = null, since = null } = args;
  return createHash('sha256')
    .update(JSON.stringify([query, threadId, channel, since === null ? null : new Date(since).toISOString()]))
    .digest('hex')
    .slice(0, DIGEST_CHARS);
}

function hitOf(r: SearchHitRow): SearchHit {
  const { id, body: _body, ...message } = serializeMessage({ ...r, body: '' });
  return {
    messageId: id,
    ...message,
    subject: r.subject,
    person: r.contact_id
      ? { id: r.contact_id, displayName: r.contact_name ?? r.identity_name ?? r.partner_value }
      : { id: null, displayName: r.identity_name ?? r.partner_value },
    matchedIn: r.matched_in,
    attachment: r.matched_in === 'attachment' ? { id: r.attachment_id!, filename: r.filename! } : null,
    snippet: snippetOf(r.snippet),
    rank: Number(r.rank),
  };
}

/** ts_headline's text on one line (whitespace folded), cut to RESULT_BOUNDS.snippetChars code points. */
export function snippetOf(headline: string): string {
  const folded = headline.replace(/\p{White_Space}+/gu, ' ').trim();
  const points = Array.from(folded);
  return points.length <= RESULT_BOUNDS.snippetChars ? folded : `${points.slice(0, RESULT_BOUNDS.snippetChars - 1).join('')}…`;
}
