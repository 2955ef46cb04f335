import { Clock } from '../../src/common/clock';
import { DeliveryLogRetention, PRUNE_BATCH } from '../../src/delivery/delivery-log-retention';
import { OutboxRelay } from '../../src/events/outbox-relay';
import { fixtureData } from '../fixtures/events';
import { closeDeliveryTestApp, createDeliveryTestApp, DeliveryTestApp, FakeClock, register } from '../support/delivery';
import { storePayload } from '../support/payloads';
import { TestReceiver } from '../support/receiver';
import { createSession, Session } from '../support/session';

const DAY_MS = 86_400_000;
/**
 * The retention cutoff of this file, long before any row other files write: the injected clock
 * stands 30 days after it, so only this file's aged rows are old enough to go.
 */
const CUTOFF = new Date('2021-01-01T00:00:00.000Z');

/** DELIVERY_LOG_RETENTION_DAYS: finished deliveries, their attempts and unreferenced payloads go; nothing else. */
describe('delivery log retention', () => {
  let t: DeliveryTestApp;
  let s: Session;
  let endpointId: string;
  let retention: DeliveryLogRetention;
  const clock = new FakeClock();
  const receiver = new TestReceiver();

  beforeAll(async () => {
    const base = await receiver.start();
    t = await createDeliveryTestApp({
      queueTag: 'retention',
      env: { DELIVERY_LOG_RETENTION_DAYS: '30' },
      overrides: (b) => b.overrideProvider(Clock).useValue(clock),
    });
    clock.offsetMs = CUTOFF.getTime() + 30 * DAY_MS - Date.now();
    s = await createSession(t.admin);
    endpointId = (await register(t, s.apiKey, { url: `${base}/retention`, events: ['message.received'] })).endpoint.id;
    retention = t.app.get(DeliveryLogRetention);
  });
  afterAll(async () => {
    await closeDeliveryTestApp(t);
    await receiver.stop();
  });

  /** A payload created at `at` (as if its first delivery was then). */
  async function payloadAt(label: string, at: Date): Promise<string> {
    const id = await storePayload(t.db, { label, at: at.toISOString(), salt: Math.random() });
    await t.db.query('UPDATE webhook_payloads SET created_at = $2 WHERE id = $1', [id, at]);
    return id;
  }

  /** `count` deliveries of one payload, created `at` (one ms apart), each with one attempt; returns their ids. */
  async function deliveries(count: number, payloadId: string, at: Date, status: string): Promise<string[]> {
    const rows: Array<{ id: string }> = await t.db.query(
      `WITH d AS (
         INSERT INTO webhook_deliveries (event_id, endpoint_id, user_id, event_type, mode, payload_id, event_created_at, status, attempt_count, created_at)
         SELECT 'evt_' || md5(random()::text || i::text), $1, $2, 'message.received', 'concise', $3, $4, $5, 1, $4::timestamptz - i * interval '1 millisecond'
           FROM generate_series(1, $6) AS i
         RETURNING id),
       a AS (INSERT INTO webhook_delivery_attempts (delivery_id, attempt_number, attempted_at, duration_ms, status_code) SELECT id, 1, $4, 3, 200 FROM d)
       SELECT id FROM d`,
      [endpointId, s.userId, payloadId, at, status, count],
    );
    return rows.map((r) => r.id);
  }

  const existing = async (table: string, ids: string[]): Promise<number> =>
    (await t.db.query(`SELECT count(*)::int AS n FROM ${table} WHERE id = ANY($1::${table === 'webhook_payloads' ? 'bigint' : 'uuid'}[])`, [ids]))[0].n;
  const attemptsOf = async (ids: string[]): Promise<number> =>
    (await t.db.query('SELECT count(*)::int AS n FROM webhook_delivery_attempts WHERE delivery_id = ANY($1::uuid[])', [ids]))[0].n;

  it('deletes finished deliveries older than the retention, with their attempts and unreferenced payloads, in batches', async () => {
    const old = new Date(CUTOFF.getTime() - DAY_MS);
    const young = new Date(CUTOFF.getTime() + DAY_MS);
    const onlyOld = await payloadAt('only-old', old);
    const shared = await payloadAt('shared', old);
    const orphan = await payloadAt('orphan', old); // its deliveries went with a deleted endpoint
    const youngOrphan = await payloadAt('young-orphan', young);

    const doomed = [
      ...(await deliveries(600, onlyOld, old, 'succeeded')),
      ...(await deliveries(400, shared, old, 'failed')),
      ...(await deliveries(234, onlyOld, old, 'cancelled')),
    ];
    const waiting = [...(await deliveries(3, onlyOld, old, 'pending')), ...(await deliveries(2, shared, old, 'retrying'))];
    const recent = await deliveries(5, shared, young, 'succeeded');
    // A recent resend of an old delivery: it keeps its payload, and its resentFromId (no foreign key since the log is partitioned by day).
    const [resend] = await t.db.query(
      `INSERT INTO webhook_deliveries (event_id, endpoint_id, user_id, event_type, mode, payload_id, event_created_at, status, resent_from_id, created_at)
       VALUES ('evt_' || md5(random()::text), $1, $2, 'message.received', 'concise', $3, $4, 'succeeded', $5, $4) RETURNING id`,
      [endpointId, s.userId, onlyOld, young, doomed[0]],
    );
    await t.db.query(`UPDATE webhook_deliveries SET next_attempt_at = NULL WHERE id = ANY($1::uuid[])`, [waiting]); // not for the sweep

    const result = await retention.prune();
    // These rows are in the history partition (before the partitioning migration's bound): deleted by rows, no day dropped.
    expect(result).toEqual({ droppedDays: [], keptDays: [], deliveries: doomed.length, payloads: 1, batches: Math.ceil(doomed.length / PRUNE_BATCH) + 1 });
    expect(await existing('webhook_deliveries', doomed)).toBe(0);
    expect(await attemptsOf(doomed)).toBe(0);
    expect(await existing('webhook_deliveries', [...waiting, ...recent, resend.id])).toBe(waiting.length + recent.length + 1);
    expect(await attemptsOf([...waiting, ...recent])).toBe(waiting.length + recent.length);
    const [copy] = await t.db.query('SELECT resent_from_id, payload_id FROM webhook_deliveries WHERE id = $1', [resend.id]);
    expect(copy).toEqual({ resent_from_id: doomed[0], payload_id: onlyOld });
    // only-old stays for the resend and the waiting ones, shared for the recent ones; the young orphan is not old enough.
    expect(await existing('webhook_payloads', [onlyOld, shared, youngOrphan])).toBe(3);
    expect(await existing('webhook_payloads', [orphan])).toBe(0);

    expect(await retention.prune()).toEqual({ droppedDays: [], keptDays: [], deliveries: 0, payloads: 0, batches: 2 });
  });

  it('several workers prune at once without waiting for each other or deleting twice', async () => {
    const old = new Date(CUTOFF.getTime() - 3 * DAY_MS);
    const payloads = await Promise.all([1, 2, 3].map((i) => payloadAt(`parallel-${i}`, old)));
    const doomed: string[] = [];
    for (const p of payloads) doomed.push(...(await deliveries(700, p, old, 'succeeded')));
    const results = await Promise.all([retention.prune(), retention.prune(), retention.prune()]);
    expect(results.reduce((sum, r) => sum + r.deliveries, 0)).toBe(doomed.length);
    expect(results.reduce((sum, r) => sum + r.payloads, 0)).toBe(3);
    expect(await existing('webhook_deliveries', doomed)).toBe(0);
    expect(await existing('webhook_payloads', payloads)).toBe(0);
  });

  it('outbox events are deleted in batches a week after they were relayed', async () => {
    const insert = (relayedAt: string | null, count: number): Promise<Array<{ id: string }>> =>
      t.db.query(
        `INSERT INTO outbox_events (type, org_id, line_id, data, occurred_at, relayed_at)
         SELECT 'contact.merged', $1, NULL, $2, now() - interval '30 days', $3::timestamptz FROM generate_series(1, $4) RETURNING id`,
        [s.orgId, JSON.stringify(fixtureData('contact.merged')), relayedAt, count],
      );
    const old = await insert(new Date(Date.now() - 8 * DAY_MS).toISOString(), 1_500);
    const kept = await insert(new Date(Date.now() - 6 * DAY_MS).toISOString(), 3);
    expect(await t.app.get(OutboxRelay).cleanup()).toBe(1_500);
    const left = async (rows: Array<{ id: string }>) =>
      (await t.db.query('SELECT count(*)::int AS n FROM outbox_events WHERE id = ANY($1::bigint[])', [rows.map((r) => r.id)]))[0].n;
    expect(await left(old)).toBe(0);
    expect(await left(kept)).toBe(3);
  });
});
