import { Clock } from '../../src/common/clock';
import { DeliveryLogRetention } from '../../src/delivery/delivery-log-retention';
import { closeDeliveryTestApp, createDeliveryTestApp, DeliveryTestApp, FakeClock, register } from '../support/delivery';
import { toolError, toolOk } from '../support/mcp';
import { storePayload } from '../support/payloads';
import { TestReceiver } from '../support/receiver';
import { createSession, Session } from '../support/session';

/**
 * The injected clock's now: DELIVERY_LOG_RETENTION_DAYS=30 puts the global cutoff at 2022-01-02,
 * long before any row other files write (and after delivery-retention's 2021 rows); org A keeps
 * 7 days, so its cutoff is 2022-01-25.
 */
const NOW = new Date('2022-02-01T00:00:00.000Z');
const ORG_OLD = new Date('2022-01-20T12:00:00.000Z');
const ORG_YOUNG = new Date('2022-01-28T12:00:00.000Z');

/** An org's own delivery log retention (admin API), shorter than DELIVERY_LOG_RETENTION_DAYS: its older finished rows go, nobody else's. */
describe('delivery log retention per org', () => {
  let t: DeliveryTestApp;
  let a: Session;
  let b: Session;
  let endpointA: string;
  let endpointB: string;
  const clock = new FakeClock();
  const receiver = new TestReceiver();

  beforeAll(async () => {
    const base = await receiver.start();
    t = await createDeliveryTestApp({
      queueTag: 'org-retention',
      env: { DELIVERY_LOG_RETENTION_DAYS: '30' },
      overrides: (builder) => builder.overrideProvider(Clock).useValue(clock),
    });
    clock.offsetMs = NOW.getTime() - Date.now();
    a = await createSession(t.admin);
    b = await createSession(t.admin);
    endpointA = (await register(t, a.apiKey, { url: `${base}/a`, events: ['message.received'] })).endpoint.id;
    endpointB = (await register(t, b.apiKey, { url: `${base}/b`, events: ['message.received'] })).endpoint.id;
  });
  afterAll(async () => {
    // Other files share this database: no org of this file may keep a retention of its own.
    await t.db.query('UPDATE orgs SET delivery_log_retention_days = NULL WHERE id = ANY($1::uuid[])', [[a.orgId, b.orgId]]);
    await closeDeliveryTestApp(t);
    await receiver.stop();
  });

  const retention = (orgId: string) => `/admin/orgs/${orgId}/delivery-log-retention`;

  async function payload(label: string, at: Date): Promise<string> {
    const id = await storePayload(t.db, { label, salt: Math.random() });
    await t.db.query('UPDATE webhook_payloads SET created_at = $2 WHERE id = $1', [id, at]);
    return id;
  }

  /** `count` deliveries to `endpointId` of one payload, created at `at`, each with one attempt. */
  async function deliveries(session: Session, endpointId: string, count: number, payloadId: string, at: Date, status: string): Promise<string[]> {
    const rows: Array<{ id: string }> = await t.db.query(
      `WITH d AS (
         INSERT INTO webhook_deliveries (event_id, endpoint_id, user_id, event_type, mode, payload_id, event_created_at, status, attempt_count, created_at, next_attempt_at)
         SELECT 'evt_' || md5(random()::text || i::text), $1, $2, 'message.received', 'concise', $3, $4, $5, 1, $4::timestamptz - i * interval '1 millisecond', NULL
           FROM generate_series(1, $6) AS i
         RETURNING id),
       a AS (INSERT INTO webhook_delivery_attempts (delivery_id, attempt_number, attempted_at, duration_ms, status_code) SELECT id, 1, $4, 3, 200 FROM d)
       SELECT id FROM d`,
      [endpointId, session.userId, payloadId, at, status, count],
    );
    return rows.map((r) => r.id);
  }
  const count = async (table: string, ids: string[]): Promise<number> =>
    (await t.db.query(`SELECT count(*)::int AS n FROM ${table} WHERE id = ANY($1::${table === 'webhook_payloads' ? 'bigint' : 'uuid'}[])`, [ids]))[0].n;
  const attemptsOf = async (ids: string[]): Promise<number> =>
    (await t.db.query('SELECT count(*)::int AS n FROM webhook_delivery_attempts WHERE delivery_id = ANY($1::uuid[])', [ids]))[0].n;

  it('is set, read and removed through the admin API, never longer than DELIVERY_LOG_RETENTION_DAYS', async () => {
    expect((await t.admin.get(retention(a.orgId)).expect(200)).body).toEqual({
      orgId: a.orgId,
      retentionDays: 30,
      source: 'default',
      orgRetentionDays: null,
      defaultRetentionDays: 30,
    });

    const longer = await t.admin.put(retention(a.orgId)).send({ days: 31 }).expect(400);
    expect(longer.body).toMatchObject({ field: 'days' });
    expect(longer.body.message).toContain('DELIVERY_LOG_RETENTION_DAYS (30)');
    for (const body of [{ days: 0 }, { days: -1 }, { days: 2.5 }, { days: '7' }, { days: null }, {}, { days: 1e20 }]) {
      const refused = await t.admin.put(retention(a.orgId)).send(body).expect(400);
      expect(refused.body).toMatchObject({ field: 'days' });
      expect(refused.body.message).toMatch(/days must be a whole number of days from 1 to DELIVERY_LOG_RETENTION_DAYS/);
    }
    expect((await t.admin.put(retention('00000000-0000-4000-8000-000000000000')).send({ days: 7 }).expect(404)).body).toMatchObject({ field: 'orgId' });
    expect((await t.admin.get(retention('nope')).expect(400)).body).toMatchObject({ field: 'orgId' });

    expect((await t.admin.put(retention(a.orgId)).send({ days: 7 }).expect(200)).body).toEqual({
      orgId: a.orgId,
      retentionDays: 7,
      source: 'org',
      orgRetentionDays: 7,
      defaultRetentionDays: 30,
    });
    expect((await t.admin.delete(retention(b.orgId)).expect(200)).body).toMatchObject({ retentionDays: 30, source: 'default' });
  });

  it("answers the retention that applies when DELIVERY_LOG_RETENTION_DAYS was lowered below an org's own, with the org's as stored", async () => {
    // As after a restart with a lower DELIVERY_LOG_RETENTION_DAYS: the org's 40 days are stored, 30 apply.
    await t.db.query('UPDATE orgs SET delivery_log_retention_days = 40 WHERE id = $1', [b.orgId]);
    try {
      expect((await t.admin.get(retention(b.orgId)).expect(200)).body).toEqual({
        orgId: b.orgId,
        retentionDays: 30,
        source: 'default',
        orgRetentionDays: 40,
        defaultRetentionDays: 30,
      });
    } finally {
      await t.db.query('UPDATE orgs SET delivery_log_retention_days = NULL WHERE id = $1', [b.orgId]);
    }
  });

  it("recover_webhook_deliveries refuses a since past the caller's org's own retention, naming its days", async () => {
    await t.admin.put(retention(a.orgId)).send({ days: 7 }).expect(200);
    const since = new Date(NOW.getTime() - 8 * 86_400_000).toISOString();
    const until = new Date(NOW.getTime() - 6 * 86_400_000).toISOString();
    expect(await toolError(t, a.apiKey, 'recover_webhook_deliveries', { endpointId: endpointA, since, until })).toMatch(
      /^since must be within the delivery log's retention of 7 days: not before 2022-01-25T00:00:\S+Z/,
    );
    // Org B keeps the installation's 30 days.
    expect(await toolOk(t, b.apiKey, 'recover_webhook_deliveries', { endpointId: endpointB, since, until })).toMatchObject({ queued: 0 });
  });

  it("deletes the org's finished deliveries past its retention, their attempts and unused payloads, and nothing of another org", async () => {
    await t.admin.put(retention(a.orgId)).send({ days: 7 }).expect(200);
    const onlyOld = await payload('a-only-old', ORG_OLD);
    const shared = await payload('a-shared', ORG_OLD);
    const ofB = await payload('b-old', ORG_OLD);

    const doomed = [
      ...(await deliveries(a, endpointA, 700, onlyOld, ORG_OLD, 'succeeded')),
      ...(await deliveries(a, endpointA, 20, shared, ORG_OLD, 'failed')),
    ];
    const waiting = await deliveries(a, endpointA, 3, onlyOld, ORG_OLD, 'retrying');
    const young = await deliveries(a, endpointA, 4, shared, ORG_YOUNG, 'succeeded');
    const otherOrg = await deliveries(b, endpointB, 5, ofB, ORG_OLD, 'succeeded');

    // Other files' rows share this database (the global step may take some of theirs): the figures are this org's rows.
    const result = await t.app.get(DeliveryLogRetention).prune();
    expect(result.deliveries).toBeGreaterThanOrEqual(doomed.length);
    expect(await count('webhook_deliveries', doomed)).toBe(0);
    expect(await attemptsOf(doomed)).toBe(0);
    expect(await count('webhook_deliveries', [...waiting, ...young, ...otherOrg])).toBe(waiting.length + young.length + otherOrg.length);
    expect(await attemptsOf([...waiting, ...young, ...otherOrg])).toBe(waiting.length + young.length + otherOrg.length);
    // only-old stays for the waiting deliveries, shared for the young ones, B's for B's.
    expect(await count('webhook_payloads', [onlyOld, shared, ofB])).toBe(3);

    // The waiting ones finish: the next run takes them and their payload.
    await t.db.query(`UPDATE webhook_deliveries SET status = 'succeeded' WHERE id = ANY($1::uuid[])`, [waiting]);
    await t.app.get(DeliveryLogRetention).prune();
    expect(await count('webhook_deliveries', waiting)).toBe(0);
    expect(await count('webhook_payloads', [onlyOld])).toBe(0);
    expect(await count('webhook_payloads', [shared, ofB])).toBe(2);

    // Back on the global retention (30 days): the young rows and B's stay.
    await t.admin.delete(retention(a.orgId)).expect(200);
    await t.app.get(DeliveryLogRetention).prune();
    expect(await count('webhook_deliveries', [...young, ...otherOrg])).toBe(young.length + otherOrg.length);
  });
});
