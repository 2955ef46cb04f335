import { byDeliveryLogGroup, createdAtOfId, deliveryLogGroupOf } from './delivery-ids';

/** A UUIDv7 whose time is `at` (as the trigger webhook_deliveries_ids makes them). */
function uuid7(at: Date): string {
  const hex = at.getTime().toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8)}-7abc-9def-0123456789ab`;
}

describe('deliveryLogGroupOf', () => {
  const historyUntil = Date.parse('2026-12-02T00:00:00Z');

  it('names the UTC day partitions of a UUIDv7 at or after the history bound, to the last millisecond of the day', () => {
    expect(deliveryLogGroupOf(uuid7(new Date('2026-12-02T00:00:00.000Z')), historyUntil)).toEqual({
      deliveries: 'webhook_deliveries_p20261202',
      attempts: 'webhook_delivery_attempts_p20261202',
      payloads: 'webhook_payloads_p20261202',
      exact: true,
    });
    expect(deliveryLogGroupOf(uuid7(new Date('2026-12-09T23:59:59.999Z')), historyUntil)?.deliveries).toBe('webhook_deliveries_p20261209');
    expect(deliveryLogGroupOf(uuid7(new Date('2026-12-10T00:00:00.000Z')), historyUntil)?.deliveries).toBe('webhook_deliveries_p20261210');
  });

  it('names the history for a UUIDv7 before the bound (its created_at known) and for an id from before the migration (v4: not known)', () => {
    const history = { deliveries: 'webhook_deliveries_history', attempts: 'webhook_delivery_attempts_history', payloads: 'webhook_payloads_history' };
    expect(deliveryLogGroupOf(uuid7(new Date('2026-12-01T23:59:59.999Z')), historyUntil)).toEqual({ ...history, exact: true });
    expect(deliveryLogGroupOf('0f3a9c7e-1b2d-4e5f-8a9b-0c1d2e3f4a5b', historyUntil)).toEqual({ ...history, exact: false });
    expect(createdAtOfId('0f3a9c7e-1b2d-4e5f-8a9b-0c1d2e3f4a5b')).toBeNull();
    expect(createdAtOfId(uuid7(new Date('2026-12-01T23:59:59.999Z')))).toEqual(new Date('2026-12-01T23:59:59.999Z'));
  });

  it('groups a batch by partition (old and new ids of the history apart), keeping each group in the order given', () => {
    const a = uuid7(new Date('2026-12-03T23:59:59.000Z'));
    const b = uuid7(new Date('2026-12-04T00:00:01.000Z'));
    const c = uuid7(new Date('2026-12-03T10:00:00.000Z'));
    const old = '0f3a9c7e-1b2d-4e5f-8a9b-0c1d2e3f4a5b';
    const early = uuid7(new Date('2026-11-30T10:00:00.000Z'));
    const groups = byDeliveryLogGroup([{ id: a }, { id: old }, { id: b }, { id: early }, { id: c }], (x) => x.id, historyUntil);
    expect(groups.map(([group, items]) => [group.deliveries, group.exact, items.map((x) => x.id)])).toEqual([
      ['webhook_deliveries_p20261203', true, [a, c]],
      ['webhook_deliveries_history', false, [old]],
      ['webhook_deliveries_p20261204', true, [b]],
      ['webhook_deliveries_history', true, [early]],
    ]);
  });

  it('leaves out an id whose time is past the year 9999 (no partition can hold it, nor can a name say its day), down to the last millisecond of 9999', () => {
    const last = uuid7(new Date('9999-12-31T23:59:59.999Z'));
    const past = 'ffffffff-ffff-7fff-bfff-ffffffffffff';
    expect(deliveryLogGroupOf(last, historyUntil)?.deliveries).toBe('webhook_deliveries_p99991231');
    expect(deliveryLogGroupOf(past, historyUntil)).toBeNull();
    const groups = byDeliveryLogGroup([{ id: past }, { id: last }], (x) => x.id, historyUntil);
    expect(groups.map(([group, items]) => [group.deliveries, items.map((x) => x.id)])).toEqual([['webhook_deliveries_p99991231', [last]]]);
  });
});
