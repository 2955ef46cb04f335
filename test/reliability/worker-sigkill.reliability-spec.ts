import { Client } from 'pg';
import { createTenant, ingestSms, IngestOutcome, percentile, runPool, Tenant, toolOk } from './support/clients';
import { startStack, Stack } from './support/fixture';
import { fmt, ResultBuilder } from './support/results';
import { deliveriesAllSucceeded, waitFor } from './support/stack';

/**
 * Issue 6: "SIGKILL the worker three times during a 20,000-event burst and restart it: every
 * event id reaches the receiver at least once; report duplicates."
 *
 * One `api` process takes the burst through the real ingest path (POST /ingest/sms/inbound, 16
 * connections); one `worker` process relays, fans out and delivers. The worker is killed with
 * SIGKILL (no shutdown hook runs) at 20 %, 45 % and 70 % of the burst and started again at once.
 * Then every message the ingest API accepted must reach the receiver, signature verified.
 */
const EVENTS = Number(process.env.RELIABILITY_BURST_EVENTS ?? 20_000);
const CONNECTIONS = 16;
const PARTNERS = 500;
const KILL_AT = [0.2, 0.45, 0.7].slice(0, Number(process.env.RELIABILITY_KILLS ?? 3));

describe('reliability: worker SIGKILLed during a burst', () => {
  let stack: Stack;
  let tenant: Tenant;
  const result = new ResultBuilder('worker-sigkill', `Worker SIGKILLed 3 times during a ${fmt(EVENTS)}-event burst`);

  beforeAll(async () => {
    // One endpoint takes the whole burst under the default per-endpoint cap: most attempts wait
    // parked in the worker's memory, and a kill loses them; the sweep must bring them back.
    stack = await startStack({ tag: 'sigkill', env: { DELIVERY_CONCURRENCY: '100' } });
    tenant = await createTenant(stack.apis[0].baseUrl, { lines: ['PHONE_NUMBER'] });
  });
  afterAll(async () => {
    result.record();
    await stack?.stop();
  });

  it('delivers every accepted event at least once, through three worker crashes', async () => {
    const api = stack.apis[0];
    const worker = stack.workers[0];
    const { receiver } = stack;
    const { secret } = await toolOk<{ secret: string }>(api.baseUrl, tenant.apiKey, 'register_webhook', {
      url: `${stack.receiverUrl}/burst`,
      events: ['message.received'],
    });
    receiver.secrets.set('/burst', [secret]);
    const line = tenant.lines[0].address;
    result.load = `${fmt(EVENTS)} inbound SMS through POST /ingest/sms/inbound (${CONNECTIONS} connections), 1 api + 1 worker process`;
    result.faults = `${KILL_AT.length} × SIGKILL of the worker mid-burst, each restarted at once`;
    result.notes.push(
      'One endpoint takes the whole burst under the default cap of 10 attempts in flight (DELIVERY_ENDPOINT_CONCURRENCY): ' +
        "the rest wait parked in the worker's memory, so each kill also loses the parked attempts, which the sweep finds due " +
        'in the database (grace 2 s here) and queues again.',
      'A duplicate is an attempt the killed worker had sent but not yet recorded: its lease (timeout + 20 s) expires, the sweep queues the next attempt, and the receiver gets the same id again.',
    );

    const outcomes: IngestOutcome[] = new Array(EVENTS);
    let done = 0;
    const kills: Array<{ atIngested: number; atReceived: number; restartMs: number }> = [];
    const started = Date.now();
    let ingestEnded = 0;

    const burst = runPool(EVENTS, CONNECTIONS, async (i) => {
      outcomes[i] = await ingestSms(api.baseUrl, {
        to: line,
        from: `+1666${String(1_000_000 + (i % PARTNERS)).padStart(7, '0')}`,
        body: `burst message ${i}`,
        providerMessageId: `burst-${i}`,
      });
      done += 1;
    }).then(() => {
      ingestEnded = Date.now();
    });

    const killer = (async () => {
      for (const fraction of KILL_AT) {
        await waitFor(() => done >= EVENTS * fraction, `${fraction * 100}% of the burst ingested`, 600_000, 20);
        const atReceived = receiver.on('/burst').length;
        await worker.stop('SIGKILL');
        const restartMs = await worker.restart();
        kills.push({ atIngested: done, atReceived, restartMs });
        process.stdout.write(`worker SIGKILLed at ${done}/${EVENTS} ingested, ${atReceived} received; restarted in ${restartMs} ms\n`);
      }
    })();
    await Promise.all([burst, killer]);
    const ingestSeconds = (ingestEnded - started) / 1000;

    const accepted = outcomes.filter((o) => o.status === 201 || o.status === 200);
    const refused = outcomes.filter((o) => !(o.status === 201 || o.status === 200));
    const acceptedIds = new Set(accepted.map((o) => o.messageId!));
    result.figure('events sent to the ingest API', fmt(EVENTS));
    result.figure(
      'ingest answers 2xx',
      `${fmt(accepted.length)} (${fmt(refused.length)} other${refused.length ? `: ${[...new Set(refused.map((o) => o.status || o.error))].join(', ')}` : ''})`,
    );
    result.figure('ingest rate', `${fmt(EVENTS / ingestSeconds)} events/s over ${ingestSeconds.toFixed(1)} s`);
    result.figure(
      'ingest latency p50 / p99 / max',
      `${fmt(
        percentile(
          outcomes.map((o) => o.ms),
          50,
        ),
      )} / ${fmt(
        percentile(
          outcomes.map((o) => o.ms),
          99,
        ),
      )} / ${fmt(Math.max(...outcomes.map((o) => o.ms)))} ms`,
    );
    result.figure('worker kills (ingested / received at each kill)', kills.map((k) => `${fmt(k.atIngested)} / ${fmt(k.atReceived)}`).join('; '));
    result.figure('worker restart time (process start to "worker started")', kills.map((k) => `${fmt(k.restartMs)} ms`).join(', '));

    const missing = () => [...acceptedIds].filter((id) => !receivedIds.has(id));
    let receivedIds = receiver.messageIds('/burst');
    try {
      await waitFor(
        () => {
          receivedIds = receiver.messageIds('/burst');
          return missing().length === 0;
        },
        'every accepted message at the receiver',
        300_000,
        500,
      );
    } finally {
      receivedIds = receiver.messageIds('/burst');
      const arrivals = receiver.on('/burst');
      const duplicates = receiver.duplicates('/burst');
      const distinct = new Set(arrivals.map((a) => a.eventId)).size;
      const allDelivered = Date.now();
      result.lost = missing().length;
      result.duplicates = `${fmt(duplicates.length)} event ids twice or more (${((100 * duplicates.length) / Math.max(1, distinct)).toFixed(2)} %)`;
      result.figure('distinct event ids received', fmt(distinct));
      result.figure('requests received', fmt(arrivals.length));
      result.figure('signatures verified (src/sdk verifyWebhook)', `${fmt(arrivals.filter((a) => a.verified).length)} of ${fmt(arrivals.length)}`);
      result.figure('accepted messages never delivered (lost)', fmt(missing().length));
      result.figure('event ids delivered more than once', `${fmt(duplicates.length)} (most copies of one: ${Math.max(1, ...duplicates.map(([, n]) => n))})`);
      result.figure('last event received after the ingest ended', `${((Math.max(...arrivals.map((a) => a.at)) - ingestEnded) / 1000).toFixed(1)} s`);
      result.figure('time from first ingest to every event delivered', `${((allDelivered - started) / 1000).toFixed(1)} s`);
    }

    expect(refused).toEqual([]);
    expect(missing()).toEqual([]);
    expect(receiver.badSignatures).toBe(0);

    // The database agrees: one delivery per accepted message, each succeeded, its id received.
    const db = new Client({ connectionString: stack.databaseUrl });
    await db.connect();
    try {
      const rows = await deliveriesAllSucceeded(db, 60_000);
      const [{ count: attempts }] = (await db.query(`SELECT count(*)::int AS count FROM webhook_delivery_attempt_log`)).rows;
      result.figure('delivery rows / attempts recorded', `${fmt(rows.reduce((n, r) => n + r.count, 0))} / ${fmt(attempts)}`);
      expect(rows).toEqual([{ status: 'succeeded', count: accepted.length }]);
      const ids = (await db.query(`SELECT event_id FROM webhook_deliveries`)).rows.map((r) => r.event_id as string);
      const got = new Set(receiver.on('/burst').map((a) => a.eventId));
      expect(ids.filter((id) => !got.has(id))).toEqual([]);
    } finally {
      await db.end();
    }
    expect(kills).toHaveLength(KILL_AT.length);
    result.passed = true;
  });
});
