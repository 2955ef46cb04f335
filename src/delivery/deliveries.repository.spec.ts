import { DataSource, EntityManager } from 'typeorm';
import { Principal } from '../identity/principal';
import { ENTITIES } from '../database/entities';
import { DeliveriesRepository } from './deliveries.repository';
import { DeliveryLogPartitions } from './delivery-log-partitions';
import { WebhookDelivery } from './webhook-delivery.entity';

/** The metadata of every entity, without a database connection (the SQL is only built, never run). */
async function offlineDataSource(): Promise<DataSource> {
  const dataSource = new DataSource({ type: 'postgres', entities: ENTITIES });
  await (dataSource as unknown as { buildMetadatas(): Promise<void> }).buildMetadatas();
  return dataSource;
}

describe('list_webhook_deliveries SQL', () => {
  it('selects the columns a delivery log row shows, never the payload', async () => {
    const caller = { channelAccess: 'LINES', lines: [] } as unknown as Principal;
    const sql = new DeliveriesRepository(await offlineDataSource(), {} as DeliveryLogPartitions).pageQuery(caller, 'e', 26).getQuery();
    const selected = /^SELECT (.*?) FROM /s
      .exec(sql)![1]
      .split(',')
      .map((c) => c.trim().replace(/ AS .*$/, ''));
    expect(selected.sort()).toEqual(
      [
        'attempt_count',
        'created_at',
        'endpoint_id',
        'event_id',
        'event_type',
        'id',
        'last_attempt_at',
        'last_error',
        'last_status_code',
        'next_attempt_at',
        'resent_from_id',
        'status',
      ].map((column) => `"d"."${column}"`),
    );
    expect(sql).not.toMatch(/data|payload/);
  });
});

describe('the writes of new deliveries', () => {
  it('hand their error to DeliveryLogPartitions.repairAfter (a missing day is made again) and still fail with it', async () => {
    const error = Object.assign(new Error('no partition of relation "webhook_payloads" found for row'), { code: '23514' });
    const seen: unknown[] = [];
    const offline = await offlineDataSource();
    // What PostgreSQL answers a row dated in a day without its partition; the SQL is built by the driver as usual.
    const manager = { connection: offline, query: () => Promise.reject(error) } as unknown as EntityManager;
    const dataSource = Object.assign(offline, { transaction: (work: (m: EntityManager) => Promise<unknown>) => work(manager) });
    const repository = new DeliveriesRepository(dataSource, { repairAfter: (e: unknown) => seen.push(e) } as unknown as DeliveryLogPartitions);
    const caller = { userId: 'u', channelAccess: 'ALL', lines: [] } as unknown as Principal;
    await expect(repository.insertFannedOut(manager, [], [])).rejects.toBe(error);
    await expect(repository.insertResend({ id: 'd' } as WebhookDelivery, null)).rejects.toBe(error);
    await expect(repository.recoverFailed(caller, 'e', new Date(), new Date(), 10, null)).rejects.toBe(error);
    expect(seen).toEqual([error, error, error]);
  });
});
