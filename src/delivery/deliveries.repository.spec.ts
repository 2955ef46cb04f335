import { DataSource } from 'typeorm';
import { Principal } from '../identity/principal';
import { ENTITIES } from '../database/entities';
import { DeliveriesRepository } from './deliveries.repository';

/** The metadata of every entity, without a database connection (the SQL is only built, never run). */
async function offlineDataSource(): Promise<DataSource> {
  const dataSource = new DataSource({ type: 'postgres', entities: ENTITIES });
  await (dataSource as unknown as { buildMetadatas(): Promise<void> }).buildMetadatas();
  return dataSource;
}

describe('list_webhook_deliveries SQL', () => {
  it('selects the columns a delivery log row shows, never the payload', async () => {
    const caller = { channelAccess: 'LINES', lines: [] } as unknown as Principal;
    const sql = new DeliveriesRepository(await offlineDataSource()).pageQuery(caller, 'e', 26).getQuery();
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
