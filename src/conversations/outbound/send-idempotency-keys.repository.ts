import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { queryNamed } from '../../database/sql';

/** A key's first use, as a later call with the same key finds it. */
export interface ClaimedKeyRow {
  tool: string;
  request_digest: string;
  message_id: string | null;
}

/** SQL of send_idempotency_keys: an org's keys of the send tools, live for `liveMs`. */
@Injectable()
export class SendIdempotencyKeysRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * Claims the key for this call in the caller's transaction: answers undefined when the key is
   * new (or its last use is older than `liveMs`, which this call now replaces), else its first
   * use. A concurrent call with the same key waits here until the first one's transaction ends.
   */
  async claim(tx: EntityManager, orgId: string, key: string, tool: string, digest: string, liveMs: number): Promise<ClaimedKeyRow | undefined> {
    const [claimed] = await queryNamed<unknown[]>(
      tx,
      `INSERT INTO send_idempotency_keys (org_id, key, tool, request_digest) VALUES (:orgId, :key, :tool, :digest)
       ON CONFLICT (org_id, key) DO UPDATE SET tool = EXCLUDED.tool, request_digest = EXCLUDED.request_digest, message_id = NULL, created_at = now()
         WHERE send_idempotency_keys.created_at < now() - make_interval(secs => :liveMs / 1000.0)
       RETURNING key`,
      { orgId, key, tool, digest, liveMs },
    );
    if (claimed) return undefined;
    const [first] = await queryNamed<ClaimedKeyRow[]>(
      tx,
      `SELECT tool, request_digest, message_id FROM send_idempotency_keys WHERE org_id = :orgId AND key = :key`,
      { orgId, key },
    );
    return first;
  }

  /** Stores the message the claiming call queued. */
  async record(tx: EntityManager, orgId: string, key: string, messageId: string): Promise<void> {
    await queryNamed(tx, `UPDATE send_idempotency_keys SET message_id = :messageId WHERE org_id = :orgId AND key = :key`, { orgId, key, messageId });
  }

  /** Deletes keys last used more than `liveMs` ago, a batch at a time. */
  async deleteExpired(liveMs: number, batch = 10_000): Promise<void> {
    await queryNamed(
      this.dataSource.manager,
      `DELETE FROM send_idempotency_keys WHERE ctid = ANY (ARRAY(
         SELECT ctid FROM send_idempotency_keys WHERE created_at < now() - make_interval(secs => :liveMs / 1000.0) LIMIT :batch))`,
      { liveMs, batch },
    );
  }
}
