import { EntityManager } from 'typeorm';
import { Clock } from '../../src/common/clock';
import { DeliveryLogPartitions } from '../../src/delivery/delivery-log-partitions';
import { DeliveryLogRetention } from '../../src/delivery/delivery-log-retention';
import { DeliveryLogPartitionsRepository } from '../../src/delivery/delivery-log-partitions.repository';
import { DeliveriesRepository } from '../../src/delivery/deliveries.repository';
import { DeliveryAttemptsRepository } from '../../src/delivery/delivery-attempts.repository';
import { deliveryById } from '../../src/delivery/delivery-ids';
import { closeDeliveryTestApp, createDeliveryTestApp, DeliveryTestApp, FakeClock, register } from '../support/delivery';
import { toolOk } from '../support/mcp';
import { TestReceiver } from '../support/receiver';
import { createSession, Session } from '../support/session';
import { waitUntil } from '../support/wait';

const DAY_MS = 86_400_000;

/**
 * The delivery log partitioned by UTC day (migration DeliveryLogPartitions, docs/delivery-log.md):
 * partitions made ahead, ids that find their partition, days dropped by retention, no orphans.
 * The test database was migrated by this run, so today is still in the history partition; the
 * rows of day partitions here are dated in the days after the history's bound.
 */
describe('delivery log partitions', () => {
  let t: DeliveryTestApp;
  let s: Session;
  let endpointId: string;
  let historyUntil: Date;
  let base: string;
  const clock = new FakeClock();
  const receiver = new TestReceiver();

  beforeAll(async () => {
    base = await receiver.start();
    t = await createDeliveryTestApp({
      queueTag: 'partitions',
      env: { DELIVERY_LOG_RETENTION_DAYS: '30' },
      overrides: (b) => b.overrideProvider(Clock).useValue(clock),
    });
    s = await createSession(t.admin);
    endpointId = (await register(t, s.apiKey, { url: `${base}/partitions`, events: ['message.received'] })).endpoint.id;
    [{ until: historyUntil }] = await t.db.query('SELECT delivery_log_history_until() AS until');
  });
  afterAll(async () => {
    await closeDeliveryTestApp(t);
    await receiver.stop();
  });

  const day = (at: Date) => at.toISOString().slice(0, 10).replace(/-/g, '');
  const tableExists = async (name: string) => (await t.db.query('SELECT to_regclass($1) IS NOT NULL AS present', [name]))[0].present as boolean;

  /** A delivery of `endpoint` created `at` (finished unless `status` says otherwise), with its payload in its day and one attempt. */
  async function deliveryAt(at: Date, status = 'succeeded', endpoint = endpointId): Promise<{ id: string; event_id: string; created_at: Date }> {
    const [row] = await t.db.query(
      `WITH p AS (INSERT INTO webhook_payloads (digest, data, created_at)
                  VALUES (sha256(convert_to(random()::text, 'UTF8')), '{"thread":{"id":"t"}}', delivery_log_day($1::timestamptz)) RETURNING id),
            d AS (INSERT INTO webhook_deliveries (event_id, endpoint_id, user_id, event_type, mode, payload_id, event_created_at, status, attempt_count,
                                                  next_attempt_at, created_at)
                  SELECT 'evt_' || md5(random()::text), $2, $3, 'message.received', 'concise', p.id, $1, $4, 1,
                         CASE WHEN $4 IN ('pending', 'retrying') THEN '2100-01-01'::timestamptz END, $1 FROM p
                  RETURNING id, event_id, created_at),
            a AS (INSERT INTO webhook_delivery_attempts (delivery_id, delivery_created_at, attempt_number, attempted_at, duration_ms, status_code)
                  SELECT id, created_at, 1, $1, 42, 200 FROM d)
       SELECT * FROM d`,
      [at, endpoint, s.userId, status],
    );
    return row;
  }

  /** A delivery as written before the migration: a v4 id and a random evt_ id (the id trigger off), in the history partition. */
  async function historyDelivery(status = 'succeeded'): Promise<{ id: string; event_id: string }> {
    return t.db.transaction(async (m) => {
      await m.query('SET LOCAL session_replication_role = replica');
      const [row] = await m.query(
        `WITH p AS (INSERT INTO webhook_payloads (digest, data, created_at) VALUES (sha256(convert_to(random()::text, 'UTF8')), '{"old":true}', now() - interval '3 days')
                    RETURNING id),
              d AS (INSERT INTO webhook_deliveries (id, event_id, endpoint_id, user_id, event_type, mode, payload_id, event_created_at, status, attempt_count,
                                                    next_attempt_at, created_at)
                    SELECT gen_random_uuid(), 'evt_' || md5(random()::text), $1, $2, 'message.received', 'concise', p.id, now(), $3, 1,
                           CASE WHEN $3 IN ('pending', 'retrying') THEN '2100-01-01'::timestamptz END, now() - interval '3 days' FROM p
                    RETURNING id, event_id),
              a AS (INSERT INTO webhook_delivery_attempts (delivery_id, attempt_number, attempted_at, duration_ms, status_code) SELECT id, 1, now(), 7, 200 FROM d)
         SELECT * FROM d`,
        [endpointId, s.userId, status],
      );
      return row;
    });
  }

  it('the partitions of today and the next days exist for the three tables, with no DEFAULT partition', async () => {
    const partitions = t.app.get(DeliveryLogPartitions);
    await partitions.ensure();
    const last = new Date(Date.now() + 7 * DAY_MS);
    for (const table of ['webhook_deliveries', 'webhook_delivery_attempts', 'webhook_payloads']) {
      expect(await tableExists(`${table}_history`)).toBe(true);
      expect(await tableExists(`${table}_p${day(historyUntil)}`)).toBe(true);
      expect(await tableExists(`${table}_p${day(last)}`)).toBe(true);
    }
    const [{ defaults }] = await t.db.query(
      `SELECT count(*)::int AS defaults FROM pg_partitioned_table WHERE partrelid = ANY ('{webhook_deliveries,webhook_delivery_attempts,webhook_payloads}'::regclass[])
          AND partdefid <> 0`,
    );
    expect(defaults).toBe(0);
    // ensure is idempotent: a second run makes nothing.
    expect(await partitions.ensure()).toBe(0);
  });

  it('event data is compressed with LZ4: the outbox, and the payloads of every partition, the history and the days made ahead included', async () => {
    await t.app.get(DeliveryLogPartitions).ensure();
    const columns: Array<{ table: string; compression: string }> = await t.db.query(
      `SELECT a.attrelid::regclass::text AS table, a.attcompression::text AS compression FROM pg_attribute a
        WHERE a.attname = 'data'
          AND a.attrelid IN (SELECT 'outbox_events'::regclass UNION ALL SELECT 'webhook_payloads'::regclass
                             UNION ALL SELECT inhrelid FROM pg_inherits WHERE inhparent = 'webhook_payloads'::regclass)`,
    );
    expect(columns.map((c) => c.table)).toEqual(
      expect.arrayContaining(['outbox_events', 'webhook_payloads_history', `webhook_payloads_p${day(historyUntil)}`]),
    );
    expect(columns.length).toBeGreaterThan(8);
    expect(columns.filter((c) => c.compression !== 'l')).toEqual([]);
    // A value written now (large enough to be compressed) is LZ4's.
    const big = JSON.stringify({ thread: { recentMessages: Array.from({ length: 60 }, (_, i) => ({ id: i, body: 'a reply in the thread '.repeat(5) })) } });
    const [{ id }] = await t.db.query(
      `INSERT INTO webhook_payloads (digest, data, created_at) VALUES (sha256(convert_to(random()::text, 'UTF8')), $1, delivery_log_day(now())) RETURNING id`,
      [big],
    );
    const [{ compression }] = await t.db.query(`SELECT pg_column_compression(data) AS compression FROM webhook_payloads WHERE id = $1`, [id]);
    expect(compression).toBe('lz4');
  });

  it("a delivery's id is a UUIDv7 of its created_at and its evt_ id that id's hex; get_webhook_delivery finds new and old rows with their attempts", async () => {
    const at = new Date(historyUntil.getTime() + DAY_MS - 1); // the last millisecond of the first day partition
    const fresh = await deliveryAt(at);
    expect(fresh.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(parseInt(fresh.id.replace(/-/g, '').slice(0, 12), 16)).toBe(at.getTime());
    expect(fresh.event_id).toBe(`evt_${fresh.id.replace(/-/g, '')}`);
    const [{ partition }] = await t.db.query('SELECT tableoid::regclass::text AS partition FROM webhook_deliveries WHERE id = $1', [fresh.id]);
    expect(partition).toBe(`webhook_deliveries_p${day(historyUntil)}`);

    const old = await historyDelivery();
    for (const id of [fresh.id, old.id]) {
      const detail = await toolOk<{ delivery: { id: string }; attempts: unknown[] }>(t, s.apiKey, 'get_webhook_delivery', { deliveryId: id });
      expect(detail.delivery.id).toBe(id);
      expect(detail.attempts).toHaveLength(1);
    }
  });

  it("fan-out names each delivery's ids in its INSERT, a UUIDv7 of the row's own created_at; a row naming ids that do not agree gets them from the trigger", async () => {
    const firstSource = 800_000_000 + Math.floor(Math.random() * 1_000_000) * 1_000;
    const fannedOut = Array.from({ length: 300 }, (_, i) => ({
      endpointId,
      userId: s.userId,
      sourceEventId: String(firstSource + i),
      lineId: null,
      type: 'message.received',
      mode: 'concise' as const,
      digest: 'cd'.repeat(32),
      createdAt: new Date(),
      traceParent: null,
    }));
    /** Calls of the id trigger's function in the transaction so far (track_functions counts PL/pgSQL calls). */
    const triggerCalls = async (m: EntityManager) =>
      ((await m.query(`SELECT calls::int FROM pg_stat_xact_user_functions WHERE funcname = 'webhook_deliveries_ids'`))[0]?.calls ?? 0) as number;
    const [inserted, callsForFanOut] = await t.db.transaction(async (m) => {
      await m.query(`SET LOCAL track_functions = 'pl'`);
      const rows = await t.app.get(DeliveriesRepository).insertFannedOut(m, [{ digest: 'cd'.repeat(32), json: '{"ids":true}' }], fannedOut);
      return [rows, await triggerCalls(m)] as const;
    });
    expect(inserted).toHaveLength(300);
    expect(callsForFanOut).toBe(0);
    const ids = inserted.map((row) => row.id);
    expect(new Set(ids).size).toBe(300);
    for (const row of inserted) {
      expect(row.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(row.event_id).toBe(`evt_${row.id.replace(/-/g, '')}`);
    }
    // The id's millisecond is the row's created_at, for every row (one cut differently from the
    // other would miss by a millisecond in about half of them).
    const [{ agree }] = await t.db.query(
      `SELECT count(*)::int AS agree FROM webhook_deliveries WHERE id = ANY ($1::uuid[]) AND delivery_log_created_at(id) = created_at`,
      [ids],
    );
    expect(agree).toBe(300);

    // Ids named by a statement that do not agree with the row (a v4; a v7 of another time; an evt_
    // id of another id) are made again by the trigger.
    const at = new Date(historyUntil.getTime() + 2 * DAY_MS + 123);
    const [{ payload }] = await t.db.query(
      `INSERT INTO webhook_payloads (digest, data, created_at) VALUES (sha256(convert_to(random()::text, 'UTF8')), '{}', delivery_log_day($1::timestamptz))
       RETURNING id AS payload`,
      [at],
    );
    const [named, callsForNamed] = await t.db.transaction(async (m) => {
      await m.query(`SET LOCAL track_functions = 'pl'`);
      const rows: Array<{ id: string; event_id: string }> = await m.query(
        `INSERT INTO webhook_deliveries (id, event_id, created_at, endpoint_id, user_id, event_type, mode, payload_id, event_created_at, status)
         SELECT n.id, n.event_id, $1, $2, $3, 'message.received', 'concise', $4, $1, 'succeeded'
           FROM (SELECT gen_random_uuid() AS id, NULL::text AS event_id
                 UNION ALL SELECT delivery_log_uuid7($1::timestamptz - interval '1 second'), NULL
                 UNION ALL SELECT delivery_log_uuid7($1::timestamptz), 'evt_' || md5('another')) AS n(id, event_id)
         RETURNING id, event_id`,
        [at, endpointId, s.userId, payload],
      );
      return [rows, await triggerCalls(m)] as const;
    });
    expect(named).toHaveLength(3);
    expect(callsForNamed).toBe(3);
    for (const row of named) {
      expect(parseInt(row.id.replace(/-/g, '').slice(0, 12), 16)).toBe(at.getTime());
      expect(row.event_id).toBe(`evt_${row.id.replace(/-/g, '')}`);
    }
  });

  it('a get by id reads only the partition its id names (and the history for an id from before the migration)', async () => {
    const fresh = await deliveryAt(new Date(historyUntil.getTime() + DAY_MS + 5_000));
    const old = await historyDelivery();
    const scanned = async (id: string): Promise<string[]> => {
      const [{ 'QUERY PLAN': plan }] = await t.db.query(`EXPLAIN (FORMAT JSON) SELECT * FROM webhook_deliveries d WHERE ${deliveryById('d', `'${id}'::uuid`)}`);
      const names: string[] = [];
      const walk = (node: { 'Relation Name'?: string; Plans?: unknown[] }) => {
        if (node['Relation Name']) names.push(node['Relation Name']);
        for (const child of node.Plans ?? []) walk(child as typeof node);
      };
      walk(plan[0].Plan);
      return names;
    };
    const nextDay = new Date(historyUntil.getTime() + DAY_MS);
    expect(await scanned(fresh.id)).toEqual([`webhook_deliveries_p${day(nextDay)}`]);
    expect(await scanned(old.id)).toEqual(['webhook_deliveries_history']);
  });

  it('a replayed fan-out makes no second delivery of an event to an endpoint, though the first is in another partition', async () => {
    const sourceEventId = String(900_000_000 + Math.floor(Math.random() * 1_000_000));
    const first = await deliveryAt(new Date(historyUntil.getTime() + 3_600_000));
    await t.db.query('UPDATE webhook_deliveries SET source_event_id = $2 WHERE id = $1', [first.id, sourceEventId]);
    // The replay runs today (the history partition); the event occurred before the first delivery.
    const replay = {
      endpointId,
      userId: s.userId,
      sourceEventId,
      lineId: null,
      type: 'message.received',
      mode: 'concise' as const,
      digest: 'ab'.repeat(32),
      createdAt: historyUntil,
      traceParent: null,
    };
    const inserted = await t.db.transaction((m) =>
      t.app.get(DeliveriesRepository).insertFannedOut(m, [{ digest: replay.digest, json: '{"replay":true}' }], [replay]),
    );
    expect(inserted).toEqual([]);
    const [{ n }] = await t.db.query('SELECT count(*)::int AS n FROM webhook_deliveries WHERE source_event_id = $1', [sourceEventId]);
    expect(n).toBe(1);
  });

  it("the worker's batch statements, which name the partitions, claim and record a delivery in its day, one from the history, and none of a dropped day", async () => {
    const attempts = t.app.get(DeliveryAttemptsRepository);
    const at = new Date(historyUntil.getTime() + 2 * DAY_MS + 1_000);
    const fresh = await deliveryAt(at, 'retrying');
    const old = await historyDelivery('retrying');
    const leaseUntil = new Date(Date.now() + 60_000);
    const claimed = await attempts.claim(
      [
        { deliveryId: fresh.id, attempt: 2 },
        { deliveryId: old.id, attempt: 2 },
      ],
      new Date(),
      leaseUntil,
    );
    expect(claimed.map((c) => ({ id: c.id, attempt: c.attempt_count, refused: c.refused, data: c.data })).sort((a, b) => a.id.localeCompare(b.id))).toEqual(
      [
        { id: fresh.id, attempt: 2, refused: false, data: { thread: { id: 't' } } },
        { id: old.id, attempt: 2, refused: false, data: { old: true } },
      ].sort((a, b) => a.id.localeCompare(b.id)),
    );
    // A second claim of the same attempts takes nothing: each row's count moved on.
    expect(await attempts.claim([{ deliveryId: fresh.id, attempt: 2 }], new Date(), leaseUntil)).toEqual([]);

    // The endpoint in a failing run: the record says so, for the run to be ended after it.
    await t.db.query(`UPDATE webhook_endpoints SET consecutive_failures = 3, failing_since = now() WHERE id = $1`, [endpointId]);
    const recorded = await attempts.recordSuccesses([
      { deliveryId: fresh.id, attempt: 2, attemptedAt: new Date(), durationMs: 5, statusCode: 204, responseBody: '', endpointId },
    ]);
    expect([...recorded.recorded]).toEqual([fresh.id]);
    expect([...recorded.inFailingRun]).toEqual([endpointId]);
    await t.db.transaction((m) =>
      attempts.recordFailures(m, [
        {
          deliveryId: old.id,
          attempt: 2,
          attemptedAt: new Date(),
          durationMs: 9,
          statusCode: 500,
          errorKind: null,
          responseBody: 'no',
          status: 'retrying',
          lastError: 'HTTP 500',
          nextAttemptAt: new Date('2100-01-01T00:00:00Z'),
        },
      ]),
    );
    const state = async (id: string) => {
      const [row] = await t.db.query(
        `SELECT d.tableoid::regclass::text AS partition, d.status, d.attempt_count AS "attemptCount", d.last_status_code AS "lastStatusCode",
                -- Where each attempt is: an attempt row, or the delivery's own row for the one that succeeded (migration SuccessOnDelivery).
                (SELECT array_agg(x.place ORDER BY x.n)
                   FROM (SELECT a.tableoid::regclass::text || ':' || a.attempt_number AS place, a.attempt_number AS n
                           FROM webhook_delivery_attempts a WHERE a.delivery_id = d.id
                         UNION ALL
                         SELECT d.tableoid::regclass::text || ':' || d.attempt_count, d.attempt_count WHERE d.success_duration_ms IS NOT NULL) AS x) AS attempts
           FROM webhook_deliveries d WHERE d.id = $1`,
        [id],
      );
      return row;
    };
    expect(await state(fresh.id)).toEqual({
      partition: `webhook_deliveries_p${day(at)}`,
      status: 'succeeded',
      attemptCount: 2,
      lastStatusCode: 204,
      attempts: [`webhook_delivery_attempts_p${day(at)}:1`, `webhook_deliveries_p${day(at)}:2`],
    });
    expect(await state(old.id)).toEqual({
      partition: 'webhook_deliveries_history',
      status: 'retrying',
      attemptCount: 2,
      lastStatusCode: 500,
      attempts: ['webhook_delivery_attempts_history:1', 'webhook_delivery_attempts_history:2'],
    });

    // An id of a day with no partition (dropped by retention, or never made): its delivery is gone, and the statements say so without failing.
    const gone = new Date(historyUntil.getTime() + 60 * DAY_MS).getTime().toString(16).padStart(12, '0');
    const goneId = `${gone.slice(0, 8)}-${gone.slice(8)}-7000-8000-000000000000`;
    expect(await tableExists(`webhook_deliveries_p${day(new Date(historyUntil.getTime() + 60 * DAY_MS))}`)).toBe(false);
    expect(await attempts.claim([{ deliveryId: goneId, attempt: 1 }], new Date(), leaseUntil)).toEqual([]);
    const none = await attempts.recordSuccesses([
      { deliveryId: goneId, attempt: 1, attemptedAt: new Date(), durationMs: 5, statusCode: 200, responseBody: '', endpointId },
    ]);
    expect(none.recorded.size).toBe(0);
  });

  it('/ready says the worker is not ready when the last partition is about to end, and ready again once days are made', async () => {
    const ready = async () => {
      const res = await t.http().get('/ready');
      return { status: res.status, check: res.body.details?.delivery_log, message: res.body.message as string | undefined };
    };
    expect(await ready()).toMatchObject({ status: 200, check: { status: 'up' } });
    // Eight days on, no worker having run meanwhile: the days made ahead (7) end within the margin.
    clock.offsetMs = 8 * DAY_MS;
    try {
      const late = await ready();
      expect(late.status).toBe(503);
      expect(late.message).toMatch(
        /delivery_log: the delivery log has no partition for webhook_delivery_attempts from \S+; webhook_deliveries from \S+; webhook_payloads from \S+: rows dated then cannot be stored \(no DEFAULT partition\)/,
      );
      expect(late.check.status).toBe('down');
      await t.app.get(DeliveryLogPartitions).ensure();
      expect(await ready()).toMatchObject({ status: 200, check: { status: 'up' } });
    } finally {
      clock.offsetMs = 0;
    }
  });

  it("deleting an endpoint leaves none of its deliveries' attempts behind", async () => {
    const doomed = (await register(t, s.apiKey, { url: `${base}/doomed`, events: ['message.received'] })).endpoint.id;
    const rows = [
      await deliveryAt(new Date(historyUntil.getTime() + 2 * DAY_MS + 1_000), 'succeeded', doomed),
      await deliveryAt(new Date(Date.now() - 60_000), 'failed', doomed),
    ];
    const ids = rows.map((r) => r.id);
    const attempts = async () =>
      (await t.db.query('SELECT count(*)::int AS n FROM webhook_delivery_attempts WHERE delivery_id = ANY ($1::uuid[])', [ids]))[0].n;
    expect(await attempts()).toBe(2);
    await t.db.query('DELETE FROM webhook_endpoints WHERE id = $1', [doomed]);
    expect(await attempts()).toBe(0);
  });

  it('retention drops a day past the cutoff from the three tables, and keeps a day where deliveries still wait', async () => {
    // Keeps the history (today's rows of the other test files) from being dropped by this clock.
    await historyDelivery('pending');
    const firstDay = new Date(historyUntil.getTime());
    const secondDay = new Date(historyUntil.getTime() + DAY_MS);
    const done = await deliveryAt(new Date(firstDay.getTime() + 3_600_000));
    const waiting = await deliveryAt(new Date(secondDay.getTime() + 3_600_000), 'retrying');
    const later = await deliveryAt(new Date(secondDay.getTime() + DAY_MS + 3_600_000));
    // The cutoff (now - 30 days) just after the end of the second day.
    clock.offsetMs = secondDay.getTime() + DAY_MS + 30 * DAY_MS + 60_000 - Date.now();
    try {
      const result = await t.app.get(DeliveryLogRetention).prune();
      expect(result.droppedDays).toEqual([day(firstDay)]);
      expect(result.keptDays).toEqual(['history', day(secondDay)]);
    } finally {
      clock.offsetMs = 0;
    }
    for (const table of ['webhook_deliveries', 'webhook_delivery_attempts', 'webhook_payloads']) {
      expect(await tableExists(`${table}_p${day(firstDay)}`)).toBe(false);
      expect(await tableExists(`${table}_p${day(secondDay)}`)).toBe(true);
    }
    const present = async (id: string) => (await t.db.query('SELECT count(*)::int AS n FROM webhook_deliveries WHERE id = $1', [id]))[0].n;
    expect(await present(done.id)).toBe(0);
    expect(await present(waiting.id)).toBe(1);
    expect(await present(later.id)).toBe(1);
    // A delivery dated in the dropped day cannot be stored: there is no DEFAULT partition.
    await expect(deliveryAt(new Date(firstDay.getTime() + 5_000))).rejects.toThrow(/no partition/);
  });

  it('a day dropped by hand: /ready names the tables with no partition for now, and a write that meets the gap has the days made again', async () => {
    const missing = new Date(historyUntil.getTime() + 3 * DAY_MS);
    for (const table of ['webhook_delivery_attempts', 'webhook_deliveries', 'webhook_payloads']) {
      await t.db.query(`ALTER TABLE ${table} DETACH PARTITION ${table}_p${day(missing)}`);
      await t.db.query(`DROP TABLE ${table}_p${day(missing)}`);
    }
    const at = new Date(missing.getTime() + 3_600_000);
    clock.offsetMs = at.getTime() - Date.now();
    try {
      const late = await t.http().get('/ready');
      expect(late.status).toBe(503);
      expect(late.body.message).toMatch(
        /the delivery log has no partition for webhook_delivery_attempts from \S+; webhook_deliveries from \S+; webhook_payloads from \S+: rows dated then cannot be stored/,
      );
      // The service's own writes date their rows by PostgreSQL's clock, which this test cannot move
      // into the gap: a row written there by SQL gives PostgreSQL's error, which the writes hand to
      // repairAfter (DeliveriesRepository.writing; its unit test shows that they do).
      const error = await deliveryAt(at).then(
        () => null,
        (failure: unknown) => failure,
      );
      expect(String(error)).toMatch(/no partition of relation "webhook_payloads" found for row/);
      const partitions = t.app.get(DeliveryLogPartitions);
      partitions.repairAfter(error);
      await waitUntil(async () => (await t.http().get('/ready')).status === 200, 'the repair to make the day again');
      await deliveryAt(at);
    } finally {
      clock.offsetMs = 0;
    }
    for (const table of ['webhook_deliveries', 'webhook_delivery_attempts', 'webhook_payloads'])
      expect(await tableExists(`${table}_p${day(missing)}`)).toBe(true);
  });

  it('retention finishes a day whose drop stopped after its deliveries, and a DEFAULT partition added by hand fails the drops only, by name', async () => {
    await historyDelivery('pending');
    const partial = new Date(historyUntil.getTime() + 5 * DAY_MS);
    await deliveryAt(new Date(partial.getTime() + 3_600_000));
    // As a crash leaves it: the attempts' and deliveries' partitions gone, the payloads' still attached.
    for (const table of ['webhook_delivery_attempts', 'webhook_deliveries']) {
      await t.db.query(`ALTER TABLE ${table} DETACH PARTITION ${table}_p${day(partial)}`);
      await t.db.query(`DROP TABLE ${table}_p${day(partial)}`);
    }
    await t.db.query('CREATE TABLE webhook_payloads_default PARTITION OF webhook_payloads DEFAULT');
    clock.offsetMs = partial.getTime() + DAY_MS + 30 * DAY_MS + 60_000 - Date.now();
    try {
      await expect(t.app.get(DeliveryLogRetention).prune()).rejects.toThrow(
        new RegExp(`could not drop the delivery log partitions .*${day(partial)}: cannot detach partitions concurrently when a default partition exists`),
      );
      expect(await tableExists(`webhook_payloads_p${day(partial)}`)).toBe(true);
      await t.db.query('DROP TABLE webhook_payloads_default');
      const result = await t.app.get(DeliveryLogRetention).prune();
      expect(result.droppedDays).toContain(day(partial));
    } finally {
      clock.offsetMs = 0;
      await t.db.query('DROP TABLE IF EXISTS webhook_payloads_default');
    }
    expect(await tableExists(`webhook_payloads_p${day(partial)}`)).toBe(false);
  });

  it("dropping a day never queues readers of the endpoints behind a transaction that checked a delivery's endpoint", async () => {
    // The last day made ahead, with a finished delivery in it.
    const partitions = await t.app.get(DeliveryLogPartitionsRepository).list();
    const last = partitions[partitions.length - 1];
    await deliveryAt(new Date(last.from!.getTime() + 3_600_000));
    // What an insert of a delivery holds until its transaction ends: its endpoint's row, FOR KEY SHARE.
    const holder = t.db.createQueryRunner();
    await holder.connect();
    await holder.startTransaction();
    await holder.query('SELECT 1 FROM webhook_endpoints WHERE id = $1 FOR KEY SHARE', [endpointId]);
    const dropping = t.app.get(DeliveryLogPartitionsRepository).drop(last.day);
    try {
      // The day is detached, and dropping it waits for the endpoints' lock the holder keeps from it.
      await waitUntil(
        async () =>
          !(await tableExists(`webhook_deliveries_p${last.day}`)) ||
          (await t.db.query(`SELECT count(*)::int AS n FROM pg_locks WHERE relation = 'webhook_endpoints'::regclass AND NOT granted`))[0].n > 0,
        'the drop to wait for the lock on webhook_endpoints',
        { intervalMs: 5 },
      );
      expect(await tableExists(`webhook_deliveries_p${last.day}`)).toBe(true);
      // Meanwhile the endpoints are read as usual: a wait for the lock gives up within 50 ms, so
      // nothing queues behind it until the holder ends (the whole table dropped at once queued them all).
      for (let i = 0; i < 5; i++) {
        const [{ n }] = await t.db.transaction(async (m) => {
          await m.query(`SET LOCAL statement_timeout = '2s'`);
          return m.query('SELECT count(*)::int AS n FROM webhook_endpoints');
        });
        expect(n).toBeGreaterThan(0);
      }
    } finally {
      await holder.commitTransaction();
      await holder.release();
    }
    await dropping;
    for (const table of ['webhook_deliveries', 'webhook_delivery_attempts', 'webhook_payloads']) expect(await tableExists(`${table}_p${last.day}`)).toBe(false);
  });
});
