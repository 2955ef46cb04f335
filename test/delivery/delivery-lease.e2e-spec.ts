import { DeliveryAttemptsRepository } from '../../src/delivery/delivery-attempts.repository';
import { closeDeliveryTestApp, createDeliveryTestApp, DeliveryTestApp, register } from '../support/delivery';
import { storePayload } from '../support/payloads';
import { createSession, Session } from '../support/session';

const HOUR_MS = 3_600_000;
const GRACE_MS = 60_000;

/**
 * A claimed attempt's lease lives in a column of its own, outside every index: the claim is a
 * heap-only (HOT) update, and the sweep still waits for the lease before re-driving a delivery.
 */
describe('delivery leases', () => {
  let t: DeliveryTestApp;
  let s: Session;
  let endpointId: string;
  let payloadId: string;
  let attempts: DeliveryAttemptsRepository;

  beforeAll(async () => {
    t = await createDeliveryTestApp({ queueTag: 'lease' });
    s = await createSession(t.admin);
    // Never called: these deliveries are claimed by hand, not by the worker.
    endpointId = (await register(t, s.apiKey, { url: 'http://127.0.0.1:9/lease', events: ['message.received'] })).endpoint.id;
    payloadId = await storePayload(t.db, { lease: Math.random() });
    attempts = t.app.get(DeliveryAttemptsRepository);
  });
  afterAll(() => closeDeliveryTestApp(t));

  /** Pending deliveries with no job, next due an hour from now (so no sweep finds them). */
  async function pending(count: number): Promise<string[]> {
    const rows: Array<{ id: string }> = await t.db.query(
      `INSERT INTO webhook_deliveries (event_id, endpoint_id, user_id, event_type, mode, payload_id, event_created_at, status, next_attempt_at)
       SELECT 'evt_' || md5(random()::text || i::text), $1, $2, 'message.received', 'concise', $3, now(), 'pending', now() + interval '1 hour'
         FROM generate_series(1, $4) AS i
       RETURNING id`,
      [endpointId, s.userId, payloadId, count],
    );
    return rows.map((r) => r.id);
  }

  it('the table leaves room on its pages, and no index covers the lease', async () => {
    // Each partition (the history, and each day's) leaves it: the partitioned parent has no pages (docs/delivery-log.md).
    const partitions: Array<{ name: string; reloptions: string[] | null }> = await t.db.query(
      `SELECT c.relname AS name, c.reloptions FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'webhook_deliveries'::regclass`,
    );
    expect(partitions.length).toBeGreaterThan(1);
    for (const partition of partitions) expect(partition).toEqual({ name: partition.name, reloptions: expect.arrayContaining(['fillfactor=50']) });
    const indexes: Array<{ indexdef: string }> = await t.db.query(`SELECT indexdef FROM pg_indexes WHERE tablename = 'webhook_deliveries'`);
    expect(indexes.length).toBeGreaterThan(5);
    expect(indexes.filter((i) => i.indexdef.includes('lease_until'))).toEqual([]);
  });

  it('a claim writes the lease and leaves next_attempt_at, as a heap-only update of the rows of whole pages', async () => {
    await t.db.query('CREATE EXTENSION IF NOT EXISTS pageinspect');
    // Pages filled by one insert, as fan-out fills them, then claimed in one statement, as the
    // worker claims them (nothing prunes a page meanwhile): half of each page is left free, room
    // for the new versions of the rows on it (migration DeliveryClaimRoom). With a fifth, as
    // before, about a quarter of them fitted.
    const ids = await pending(80);
    const before: Array<{ id: string; ctid: string; partition: string; next_attempt_at: Date }> = await t.db.query(
      'SELECT id, ctid::text, tableoid::regclass::text AS partition, next_attempt_at FROM webhook_deliveries WHERE id = ANY($1::uuid[])',
      [ids],
    );
    const now = new Date();
    const leaseUntil = new Date(now.getTime() + 30_000);
    const claimed = await attempts.claim(
      ids.map((deliveryId) => ({ deliveryId, attempt: 1 })),
      now,
      leaseUntil,
    );
    expect(claimed.map((r) => r.id).sort()).toEqual([...ids].sort());

    const after: Array<{ id: string; next_attempt_at: Date; lease_until: Date; attempt_count: number }> = await t.db.query(
      'SELECT id, next_attempt_at, lease_until, attempt_count FROM webhook_deliveries WHERE id = ANY($1::uuid[])',
      [ids],
    );
    for (const row of after) {
      expect(row.attempt_count).toBe(1);
      expect(row.lease_until.getTime()).toBe(leaseUntil.getTime());
      expect(row.next_attempt_at.getTime()).toBe(before.find((b) => b.id === row.id)!.next_attempt_at.getTime());
    }
    // Each old row version is marked HEAP_HOT_UPDATED (0x4000), or was already pruned to a redirect (lp_flags 2).
    const hot: string[] = [];
    for (const { ctid, partition } of before) {
      const [block, offset] = ctid.slice(1, -1).split(',').map(Number);
      const [item] = await t.db.query(`SELECT lp_flags, t_infomask2 FROM heap_page_items(get_raw_page($3, $1::int)) WHERE lp = $2`, [block, offset, partition]);
      if (item.lp_flags === 2 || (item.lp_flags === 1 && (item.t_infomask2 & 0x4000) !== 0)) hot.push(ctid);
    }
    expect(hot).toHaveLength(before.length);
  });

  it("a late success and the next attempt's, recorded together: the next on the delivery's row, the late one as an attempt row", async () => {
    const [id] = await pending(1);
    const leaseUntil = new Date(Date.now() + HOUR_MS);
    // Attempt 1 claimed, its lease ran out, and the sweep's attempt 2 claimed: both answer 2xx.
    await attempts.claim([{ deliveryId: id, attempt: 1 }], new Date(), leaseUntil);
    await attempts.claim([{ deliveryId: id, attempt: 2 }], new Date(), leaseUntil);
    const success = (attempt: number, durationMs: number) => ({
      deliveryId: id,
      attempt,
      attemptedAt: new Date(),
      durationMs,
      statusCode: 200,
      responseBody: `answer ${attempt}`,
      endpointId,
    });
    const { recorded } = await attempts.recordSuccesses([success(1, 11), success(2, 22)]);
    expect([...recorded]).toEqual([id]);
    const [row] = await t.db.query('SELECT status, attempt_count, success_duration_ms, success_response_body FROM webhook_deliveries WHERE id = $1', [id]);
    expect(row).toEqual({ status: 'succeeded', attempt_count: 2, success_duration_ms: 22, success_response_body: 'answer 2' });
    const rows = await t.db.query('SELECT attempt_number, duration_ms, response_body FROM webhook_delivery_attempts WHERE delivery_id = $1', [id]);
    expect(rows).toEqual([{ attempt_number: 1, duration_ms: 11, response_body: 'answer 1' }]);
  });

  it('the sweep re-drives a claimed delivery only once its lease, too, is past the grace', async () => {
    const [held, expired, neverClaimed] = await pending(3);
    const overdueIds = async () =>
      (await attempts.overdue(GRACE_MS, '00000000-0000-0000-0000-000000000000', 100_000))
        .map((r) => r.id)
        .filter((id) => [held, expired, neverClaimed].includes(id));
    await t.db.query(`UPDATE webhook_deliveries SET next_attempt_at = now() - interval '2 hours' WHERE id = ANY($1::uuid[])`, [[held, expired, neverClaimed]]);
    await attempts.claim(
      [held, expired].map((deliveryId) => ({ deliveryId, attempt: 1 })),
      new Date(),
      new Date(Date.now() + HOUR_MS),
    );
    expect((await overdueIds()).sort()).toEqual([neverClaimed]);

    await t.db.query(`UPDATE webhook_deliveries SET lease_until = now() - interval '2 minutes' WHERE id = $1`, [expired]);
    expect((await overdueIds()).sort()).toEqual([expired, neverClaimed].sort());
    await t.db.query(`UPDATE webhook_deliveries SET status = 'cancelled', next_attempt_at = NULL WHERE id = ANY($1::uuid[])`, [[held, expired, neverClaimed]]);
  });
});
