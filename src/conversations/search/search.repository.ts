import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Principal } from '../../identity/principal';
import { callerLines } from '../../identity/line-access.sql';
import { plannedPerCall, queryNamed } from '../../database/sql';
import { Channel } from '../conversation-vocabulary';
import { MessageRow } from '../message-data.repository';
import { RESULT_BOUNDS } from '../../common/result-bounds';

/**
 * The indexed expressions, exactly as the migration MessageSearch made messages_search_idx and
 * attachments_search_idx: PostgreSQL uses an expression index only for the same expression, so
 * these texts must not drift from it (test/conversations/search-messages.e2e-spec.ts checks the plan). The
 * 'simple' configuration and the 100,000 characters (RESULT_BOUNDS.searchableChars) are explained
 * there and in docs/mcp.md.
 */
const MESSAGE_VECTOR = `(setweight(to_tsvector('simple'::regconfig, coalesce(m.subject, '')), 'A') || to_tsvector('simple'::regconfig, left(m.body, 100000)))`;
const ATTACHMENT_VECTOR = `(setweight(to_tsvector('simple'::regconfig, a.filename), 'A') || to_tsvector('simple'::regconfig, left(coalesce(a.extracted_text, ''), 100000)))`;
const QUERY = `websearch_to_tsquery('simple'::regconfig, :query)`;

/** The expressions, for the test that asks the planner whether they use the indexes. */
export const SEARCH_EXPRESSIONS = { messageVector: MESSAGE_VECTOR, attachmentVector: ATTACHMENT_VECTOR, query: QUERY } as const;

/**
 * ts_rank's normalization 1: the rank is divided by 1 + the logarithm of the document's length, so
 * a long PDF that repeats a word does not push every short message down.
 */
const RANK_NORMALIZATION = 1;

/** What ts_headline writes before and after each matched word of a snippet (SearchService.find's `marks`). */
export interface SnippetMarks {
  start: string;
  stop: string;
}

/** ts_headline's options: a parameter, so snippets with other marks keep the statement's one prepared text. */
function headlineOptions(marks: SnippetMarks): string {
  return (
    `MaxWords=${RESULT_BOUNDS.snippetMaxWords}, MinWords=${RESULT_BOUNDS.snippetMinWords}, MaxFragments=${RESULT_BOUNDS.snippetFragments}, ` +
    `FragmentDelimiter=" … ", StartSel="${marks.start}", StopSel="${marks.stop}"`
  );
}

/** A hit of search_messages: its message, the partner of its thread, where it matched, its rank and its snippet. */
export type SearchHitRow = Omit<MessageRow, 'body'> & {
  hit_id: string;
  matched_in: 'body' | 'attachment';
  attachment_id: string | null;
  filename: string | null;
  subject: string | null;
  /** ts_rank as PostgreSQL writes the real (shortest text that reads back the same), for the cursor. */
  rank: string;
  snippet: string;
  partner_value: string;
  identity_name: string | null;
  contact_id: string | null;
  contact_name: string | null;
  /** How many matches were ranked (at most RESULT_BOUNDS.searchRankedMatches): the same on every row. */
  candidate_count: number;
};

export interface SearchFilter {
  query: string;
  threadId?: string;
  channel?: Channel;
  since?: string;
  /** Only messages from this time on: the recency window SearchService searches first (windowStart). */
  windowStart?: Date;
  /** The (rank, hit id) of the last hit of the previous page. */
  after?: { rank: string; id: string };
  limit: number;
  /** Around each matched word of a snippet. */
  marks: SnippetMarks;
}

/**
 * SQL of search_messages. Every statement keeps to the caller's org and to threads on lines the
 * caller may see (callerLines), whatever the filters say.
 */
@Injectable()
export class SearchRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** How websearch_to_tsquery reads the query: how many terms it has, and whether any is not excluded (querytree 'T': none to look up). */
  async parse(query: string): Promise<{ nodes: number; searchable: boolean }> {
    const [row] = await queryNamed<Array<{ nodes: number; searchable: boolean }>>(
      this.dataSource.manager,
      `SELECT numnode(q) AS nodes, querytree(q) <> 'T' AS searchable FROM ${QUERY} AS q`,
      { query },
    );
    return row;
  }

  /**
   * When the caller's org's newest message, its `nth` newest (null when it has fewer: the start of
   * a recency window of `nth` messages) and its oldest were stored. Reads `nth` entries of
   * messages_org_recent_idx, and one at its other end.
   */
  async recency(caller: Principal, nth: number): Promise<{ newest: Date | null; windowStart: Date | null; oldest: Date | null }> {
    const [row] = await queryNamed<Array<{ newest: Date | null; window_start: Date | null; oldest: Date | null }>>(
      this.dataSource.manager,
      `SELECT (SELECT created_at FROM messages WHERE org_id = :orgId ORDER BY created_at DESC LIMIT 1) AS newest,
              (SELECT created_at FROM messages WHERE org_id = :orgId ORDER BY created_at DESC OFFSET :skip LIMIT 1) AS window_start,
              (SELECT created_at FROM messages WHERE org_id = :orgId ORDER BY created_at LIMIT 1) AS oldest`,
      { orgId: caller.orgId, skip: nth - 1 },
    );
    return { newest: row.newest, windowStart: row.window_start, oldest: row.oldest };
  }

  /**
   * Up to `limit` hits, best first (rank DESC, then hit id DESC), after the position `after`: the
   * messages whose subject or body match and the attachments whose filename or extracted text
   * match. In three steps, each bounded:
   *
   * 1. `matched`: one scan of each GIN index, kept to the caller's org and the filters (and the
   *    recency window, when given: the planner then ANDs the GIN index's bitmap with
   *    messages_org_recent_idx's, and reads only the window's matches from the table). It is
   *    MATERIALIZED so the planner cannot turn it into a nested loop that scans the index once per
   *    thread (it did: the org's threads looked few, and a word in 10 % of 1M messages took 5 s).
   * 2. `candidates`: the matches on lines the caller may see (a message's line is its thread's), the newest
   *    RESULT_BOUNDS.searchRankedMatches of them: ranking recomputes each match's tsvector, so
   *    ranking every match of a very common word would cost seconds. How many there were is
   *    answered on every row (candidate_count), so the service can tell whether a window held enough.
   * 3. Ranked, the page cut, and snippets made for the page's hits only.
   *
   * Planned per call: how many rows a query matches ranges from none to millions.
   */
  search(caller: Principal, filter: SearchFilter): Promise<SearchHitRow[]> {
    const scope = callerLines(caller, 'x.line_id');
    const narrow = [`m.org_id = :orgId`];
    if (filter.threadId !== undefined) narrow.push(`m.thread_id = :threadId`);
    if (filter.channel !== undefined) narrow.push(`m.channel = :channel`);
    if (filter.since !== undefined) narrow.push(`m.created_at >= :since::timestamptz`);
    if (filter.windowStart !== undefined) narrow.push(`m.created_at >= :windowStart::timestamptz`);
    const after = filter.after ? `WHERE (h.rank, h.hit_id) < (:afterRank::real, :afterId::uuid)` : '';
    return queryNamed(
      this.dataSource.manager,
      plannedPerCall(
        `WITH matched AS MATERIALIZED (
           SELECT m.id AS message_id, NULL::uuid AS attachment_id, m.line_id, m.created_at
             FROM messages m
            WHERE ${MESSAGE_VECTOR} @@ ${QUERY} AND ${narrow.join(' AND ')}
           UNION ALL
           SELECT m.id, a.id, m.line_id, m.created_at
             FROM attachments a JOIN messages m ON m.id = a.message_id
            WHERE ${ATTACHMENT_VECTOR} @@ ${QUERY} AND a.org_id = :orgId AND ${narrow.join(' AND ')}
         ), candidates AS MATERIALIZED (
           SELECT x.message_id, x.attachment_id
             FROM matched x
            WHERE ${scope.sql}
            ORDER BY x.created_at DESC, x.message_id DESC, x.attachment_id DESC NULLS FIRST
            LIMIT :rankedAtMost
         ), ranked AS (
           SELECT coalesce(c.attachment_id, c.message_id) AS hit_id,
                  CASE WHEN c.attachment_id IS NULL THEN 'body' ELSE 'attachment' END AS matched_in,
                  c.attachment_id, left(a.filename, ${RESULT_BOUNDS.messageAttachmentNameChars}) AS filename, c.message_id,
                  CASE WHEN c.attachment_id IS NULL THEN ts_rank(${MESSAGE_VECTOR}, ${QUERY}, ${RANK_NORMALIZATION})
                       ELSE ts_rank(${ATTACHMENT_VECTOR}, ${QUERY}, ${RANK_NORMALIZATION}) END AS rank
             FROM candidates c
             JOIN messages m ON m.id = c.message_id
             LEFT JOIN attachments a ON a.id = c.attachment_id
         )
         SELECT p.hit_id, p.matched_in, p.attachment_id, p.filename, p.rank::text AS rank, (SELECT count(*) FROM candidates)::int AS candidate_count,
                m.id, m.thread_id, m.channel, m.direction, m.status, m.created_at, m.sent_at,
                m.from_value, m.from_kind, m.to_value, m.to_kind, left(m.subject, ${RESULT_BOUNDS.subjectChars}) AS subject,
                i.value AS partner_value, i.display_name AS identity_name, c.id AS contact_id, c.display_name AS contact_name,
                ts_headline('simple'::regconfig,
                  CASE WHEN p.matched_in = 'body' THEN coalesce(m.subject || E'\\n', '') || left(m.body, 100000)
                       ELSE (SELECT a.filename || E'\\n' || left(coalesce(a.extracted_text, ''), 100000) FROM attachments a WHERE a.id = p.attachment_id) END,
                  ${QUERY}, :headlineOptions) AS snippet
           FROM (SELECT h.* FROM ranked h ${after} ORDER BY h.rank DESC, h.hit_id DESC LIMIT :limit) p
           JOIN messages m ON m.id = p.message_id
           JOIN threads t ON t.id = m.thread_id
           JOIN identities i ON i.id = t.partner_identity_id
           LEFT JOIN contacts c ON c.id = i.contact_id
          ORDER BY p.rank DESC, p.hit_id DESC`,
      ),
      {
        query: filter.query,
        orgId: caller.orgId,
        ...scope.parameters,
        limit: filter.limit,
        rankedAtMost: RESULT_BOUNDS.searchRankedMatches,
        headlineOptions: headlineOptions(filter.marks),
        ...(filter.threadId !== undefined && { threadId: filter.threadId }),
        ...(filter.channel !== undefined && { channel: filter.channel }),
        ...(filter.since !== undefined && { since: filter.since }),
        ...(filter.windowStart !== undefined && { windowStart: filter.windowStart }),
        ...(filter.after && { afterRank: filter.after.rank, afterId: filter.after.id }),
      },
    );
  }
}
