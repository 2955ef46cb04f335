import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';

/** The SQL of per-org delivery log retention (OrgDeliveryLogRetention). */
@Injectable()
export class OrgDeliveryLogRetentionRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** The org's own retention in days (null: the global setting); undefined when there is no such org. */
  async days(orgId: string): Promise<number | null | undefined> {
    const [row]: Array<{ days: number | null }> = await this.dataSource.query(`SELECT delivery_log_retention_days AS days FROM orgs WHERE id = $1`, [orgId]);
    return row ? row.days : undefined;
  }

  /** Sets (or with null removes) the org's own retention; false when there is no such org. */
  async setDays(orgId: string, days: number | null): Promise<boolean> {
    const [, changed]: [unknown, number] = await this.dataSource.query(`UPDATE orgs SET delivery_log_retention_days = $2 WHERE id = $1`, [orgId, days]);
    return changed > 0;
  }

  /** The orgs whose own retention is under `days`, with theirs. */
  orgsUnder(days: number): Promise<Array<{ id: string; days: number }>> {
    return this.dataSource.query(`SELECT id, delivery_log_retention_days AS days FROM orgs WHERE delivery_log_retention_days < $1 ORDER BY id`, [days]);
  }

  /**
   * Deletes up to `limit` of the org's finished deliveries created before `cutoff` (their attempts
   * by trigger), then those of their payloads no delivery uses any more, in one transaction: one
   * batch. The org's rows are found through each endpoint's (endpoint_id, created_at) index, in
   * the partitions before the cutoff only.
   */
  async deleteBatch(orgId: string, cutoff: Date, limit: number): Promise<{ deliveries: number; payloads: number }> {
    return this.dataSource.transaction(async (tx) => {
      const [gone, deliveries]: [Array<{ payload_id: string }>, number] = await tx.query(
        `DELETE FROM webhook_deliveries d
          WHERE (d.id, d.created_at) IN (
                  SELECT x.id, x.created_at FROM webhook_deliveries x
                   WHERE x.endpoint_id = ANY (ARRAY(SELECT e.id FROM webhook_endpoints e WHERE e.org_id = $1))
                     AND x.status IN ('succeeded', 'failed', 'cancelled') AND x.created_at < $2
                   ORDER BY x.created_at LIMIT $3 FOR UPDATE SKIP LOCKED)
          RETURNING d.payload_id::text AS payload_id`,
        [orgId, cutoff, limit],
      );
      if (deliveries === 0) return { deliveries: 0, payloads: 0 };
      const [, payloads]: [unknown, number] = await tx.query(
        `DELETE FROM webhook_payloads p
          WHERE p.id = ANY ($1::bigint[]) AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.payload_id = p.id)`,
        [[...new Set(gone.map((g) => g.payload_id))]],
      );
      return { deliveries, payloads };
    });
  }
}
