import { byDeliveryLogTables, deliveryLogTablesOf } from './delivery-ids';

/** A UUIDv7 whose time is `at` (as the trigger webhook_deliveries_ids makes them). */
function uuid7(at: Date): string {
  const hex = at.getTime().toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8)}-7abc-9def-0123456789ab`;
}

describe('deliveryLogTablesOf', () => {
  const historyUntil = Date.parse('2026-12-02T00:00:00Z');

  it('names the UTC day partitions of a UUIDv7 at or after the history bound, to the last millisecond of the day', () => {
    expect(deliveryLogTablesOf(uuid7(new Date('2026-12-02T00:00:00.000Z')), historyUntil)).toEqual({
      deliveries: 'webhook_deliveries_p20261202',
      attempts: 'webhook_delivery_attempts_p20261202',
      payloads: 'webhook_payloads_p20261202',
    });
    expect(deliveryLogTablesOf(uuid7(new Date('2026-12-09T23:59:59.999Z')), historyUntil).deliveries).toBe('webhook_deliveries_p20261209');
    expect(deliveryLogTablesOf(uuid7(new Date('2026-12-10T00:00:00.000Z')), historyUntil).deliveries).toBe('webhook_deliveries_p20261210');
  });

  it('names the history for a UUIDv7 before the bound and for an id from before the migration (v4)', () => {
    const history = { deliveries: 'webhook_deliveries_history', attempts: 'webhook_delivery_attempts_history', payloads: 'webhook_payloads_history' };
    expect(deliveryLogTablesOf(uuid7(new Date('2026-12-01T23:59:59.999Z')), historyUntil)).toEqual(history);
    expect(deliveryLogTablesOf('0f3a9c7e-1b2d-4e5f-8a9b-0c1d2e3f4a5b', historyUntil)).toEqual(history);
  });

  it('groups a batch by partition, keeping each group in the order given', () => {
    const a = uuid7(new Date('2026-12-03T23:59:59.000Z'));
    const b = uuid7(new Date('2026-12-04T00:00:01.000Z'));
    const c = uuid7(new Date('2026-12-03T10:00:00.000Z'));
    const groups = byDeliveryLogTables([{ id: a }, { id: b }, { id: c }], (x) => x.id, historyUntil);
    expect(groups.map(([tables, items]) => [tables.deliveries, items.map((x) => x.id)])).toEqual([
      ['webhook_deliveries_p20261203', [a, c]],
      ['webhook_deliveries_p20261204', [b]],
    ]);
  });
});
