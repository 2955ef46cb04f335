import { createHash } from 'node:crypto';
import { Client } from 'pg';
import { createTenant, ingestSms, IngestOutcome, percentile, runPool, Tenant, toolOk } from './support/clients';
import { startStack, Stack } from './support/fixture';
import { fmt, ResultBuilder } from './support/results';
import { waitFor } from './support/stack';

/**
 * Issue 6: "Two API and two worker processes on one database and Redis: no attempt is sent twice."
 *
 * Two `api` processes share the inbound traffic; two `worker` processes relay, fan out and deliver
 * from the same outbox and the same Bull queue, with the sweep running every second (grace 2 s)
 * in both, so jobs are re-added often. The receiver fails the first attempt of about a fifth of
 * the events (500), so retries run too. At the end, for every delivery, the requests that reached
 * the receiver with its event id must equal the attempts the database recorded for it, and
 * PostgreSQL must have broken no deadlock (the transaction it aborts may be a recording).
 */
const EVENTS = Number(process.env.RELIABILITY_REPLICA_EVENTS ?? 1_500);
const ENDPOINTS = 3;
const FAIL_FIRST_PERCENT = 20;

describe('reliability: two api and two worker processes', () => {
  let stack: Stack;
  let tenant: Tenant;
  const result = new ResultBuilder('replicas', '2 api + 2 worker processes on one database and Redis');

  beforeAll(async () => {
    stack = await startStack({ tag: 'replicas', apis: 2, workers: 2 });
    tenant = await createTenant(stack.apis[0].baseUrl, { lines: ['PHONE_NUMBER'] });
  });
  afterAll(async () => {
    result.record();
    await stack?.stop();
  });

  it('sends no attempt twice: requests per event id = attempts recorded', async () => {
    const { receiver, apis } = stack;
    for (let i = 0; i < ENDPOINTS; i++) {
      const { secret } = await toolOk<{ secret: string }>(apis[i % 2].baseUrl, tenant.apiKey, 'register_webhook', {
        url: `${stack.receiverUrl}/replica/${i}`,
        events: ['message.received'],
      });
      receiver.secrets.set(`/replica/${i}`, [secret]);
    }
    const failsFirst = (eventId: string) => createHash('sha256').update(eventId).digest()[0] < (256 * FAIL_FIRST_PERCENT) / 100;
    receiver.answer = (arrival, seen) => (seen === 1 && failsFirst(arrival.eventId) ? 500 : 200);

    const line = tenant.lines[0].address;
    const outcomes: IngestOutcome[] = new Array(EVENTS);
    const started = Date.now();
    await runPool(EVENTS, 8, async (i) => {
      outcomes[i] = await ingestSms(apis[i % 2].baseUrl, {
        to: line,
        from: `+1666${String(4_000_000 + (i % 200)).padStart(7, '0')}`,
        body: `replica ${i}`,
        providerMessageId: `replica-${i}`,
      });
    });
    const ingestSeconds = (Date.now() - started) / 1000;
    const accepted = outcomes.filter((o) => o.status === 201 || o.status === 200);
    result.load = `${fmt(EVENTS)} inbound SMS through 2 api processes, ${ENDPOINTS} endpoints each (${fmt(EVENTS * ENDPOINTS)} deliveries), 2 workers`;
    result.faults = `${FAIL_FIRST_PERCENT} % of first attempts answered 500 (retried); sweep every 1 s in both workers`;
    result.figure(
      'ingest answers 2xx (api 1 / api 2)',
      `${fmt(accepted.length)} of ${fmt(EVENTS)} (${fmt(outcomes.filter((o, i) => i % 2 === 0 && o.status < 300).length)} / ${fmt(outcomes.filter((o, i) => i % 2 === 1 && o.status < 300).length)})`,
    );
    result.figure(
      'ingest rate, p99 latency',
      `${fmt(EVENTS / ingestSeconds)} events/s, ${fmt(
        percentile(
          outcomes.map((o) => o.ms),
          99,
        ),
      )} ms`,
    );

    const db = new Client({ connectionString: stack.databaseUrl });
    await db.connect();
    try {
      const expected = accepted.length * ENDPOINTS;
      const settled = await waitFor(
        async () => {
          const r = await db.query(`SELECT count(*) FILTER (WHERE status = 'succeeded')::int AS done, count(*)::int AS total FROM webhook_deliveries`);
          return r.rows[0].done === expected && r.rows[0];
        },
        `all ${expected} deliveries succeeded`,
        240_000,
        500,
      ).catch(async (error: Error) => {
        const r = await db.query(`SELECT status, count(*)::int AS n FROM webhook_deliveries GROUP BY status`);
        result.notes.push(`not settled: ${JSON.stringify(r.rows)}`);
        throw error;
      });
      result.figure('time until every delivery succeeded', `${((Date.now() - started) / 1000).toFixed(1)} s`);
      const rows: Array<{ event_id: string; attempt_count: number; recorded: number }> = (
        await db.query(
          `SELECT d.event_id, d.attempt_count, (SELECT count(*)::int FROM webhook_delivery_attempt_log a WHERE a.delivery_id = d.id) AS recorded
             FROM webhook_deliveries d`,
        )
      ).rows;
      const received = receiver.perEvent;
      const mismatched = rows.filter((r) => (received.get(r.event_id) ?? 0) !== r.recorded || r.recorded !== r.attempt_count);
      const attempts = rows.reduce((n, r) => n + r.recorded, 0);
      const retried = rows.filter((r) => r.recorded > 1).length;
      const requests = receiver.arrivals.length;
      result.lost = rows.filter((r) => !received.has(r.event_id)).length;
      result.duplicates = `${fmt(mismatched.length)} deliveries with more requests than recorded attempts`;
      result.figure('delivery rows', `${fmt(settled.total)} (expected ${fmt(expected)})`);
      result.figure('attempts recorded / requests received', `${fmt(attempts)} / ${fmt(requests)}`);
      result.figure('deliveries retried after a 500', fmt(retried));
      result.figure('deliveries whose requests ≠ recorded attempts', fmt(mismatched.length));
      // A deadlock aborts one of its transactions: an aborted recording loses attempts already sent.
      const [{ deadlocks }] = (await db.query(`SELECT deadlocks::int FROM pg_stat_database WHERE datname = current_database()`)).rows;
      result.figure('deadlocks PostgreSQL broke', fmt(deadlocks));
      result.figure('signatures verified', `${fmt(receiver.arrivals.filter((a) => a.verified).length)} of ${fmt(requests)}`);
      expect(accepted).toHaveLength(EVENTS);
      expect(settled.total).toBe(expected);
      expect(mismatched.slice(0, 10)).toEqual([]);
      expect(requests).toBe(attempts);
      expect(receiver.badSignatures).toBe(0);
      expect(deadlocks).toBe(0);
    } finally {
      await db.end();
    }
    result.passed = true;
  });
});
