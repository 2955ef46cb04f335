import { MigrationInterface, QueryRunner } from 'typeorm';
import { createIndexUnlessBuilt } from './prebuilt-index';

/**
 * Full-text search of search_messages (docs/mcp.md, "Searching messages"): two GIN expression
 * indexes, no stored column.
 *
 * - messages_search_idx: an email's subject (weight A) and the first 100,000 characters of the
 *   body (weight D).
 * - attachments_search_idx: the filename (weight A) and the first 100,000 characters of the
 *   extracted text (weight D; empty until extraction has run).
 *
 * The 'simple' text search configuration: mail is written in any language, and a language's
 * stemmer and stop-word list (english's) mangle the others; 'simple' lower-cases and keeps every
 * word. The 100,000-character bound keeps every tsvector far below PostgreSQL's 1 MB limit (an
 * insert whose tsvector exceeded it would fail) and bounds the work of indexing one message.
 * SearchRepository's SQL repeats these expressions exactly: the planner uses an expression index
 * only for the very same expression.
 *
 * On a large table: CREATE INDEX reads the whole table and blocks writes to it (not reads) while
 * it builds, 1M messages in about the time docs/BENCHMARKS.md (scenario 8) gives. An operator with
 * many messages builds the index first, without blocking writes, with CREATE INDEX CONCURRENTLY
 * and the same name and expression; this migration then finds it and builds nothing
 * (createIndexUnlessBuilt).
 */
export class MessageSearch1763800660000 implements MigrationInterface {
  name = 'MessageSearch1763800660000';

  async up(q: QueryRunner): Promise<void> {
    await createIndexUnlessBuilt(
      q,
      'messages_search_idx',
      `ON messages USING gin ((
         setweight(to_tsvector('simple'::regconfig, coalesce(subject, '')), 'A') || to_tsvector('simple'::regconfig, left(body, 100000))))`,
    );
    await createIndexUnlessBuilt(
      q,
      'attachments_search_idx',
      `ON attachments USING gin ((
         setweight(to_tsvector('simple'::regconfig, filename), 'A') || to_tsvector('simple'::regconfig, left(coalesce(extracted_text, ''), 100000))))`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS attachments_search_idx`);
    await q.query(`DROP INDEX IF EXISTS messages_search_idx`);
  }
}
