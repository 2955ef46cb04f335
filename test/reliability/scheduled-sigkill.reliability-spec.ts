import { Client } from 'pg';
import { createTenant, runPool, Tenant, toolOk } from './support/clients';
import { CarrierStandIn } from './support/carrier';
import { startStack, Stack } from './support/fixture';
import { fmt, ResultBuilder } from './support/results';
import { waitFor } from './support/stack';

/**
 * Issue 45: "a scheduled send survives a worker SIGKILL". Messages are scheduled a few seconds
 * ahead through send_sms (sendAt) on one `api` process; two `worker` processes release them when
 * due (delayed jobs, the due sweep) and hand them to a carrier stand-in. Each worker is SIGKILLed
 * while the messages come due and started again at once. Every message must be released from
 * SCHEDULED exactly once (one SCHEDULED → QUEUED move), never before its time, reach the carrier
 * and end SENT or DELIVERED. The hand-off after the release is the QUEUED messages' own: a worker
 * killed between the carrier's answer and its record hands the message over again with the same
 * Idempotency-Key (the message id), so the carrier takes it once; such repeats are counted.
 */
const MESSAGES = Number(process.env.RELIABILITY_SCHEDULED_MESSAGES ?? 200);
const DUE_IN_MS = 15_000;
const SPREAD_MS = 6_000;

describe('reliability: scheduled sends through worker SIGKILLs', () => {
  let stack: Stack;
  let tenant: Tenant;
  let carrier: CarrierStandIn;
  const result = new ResultBuilder('scheduled-sigkill', `Scheduled sends: ${fmt(MESSAGES)} messages coming due through 2 worker SIGKILLs`);

  beforeAll(async () => {
    carrier = new CarrierStandIn();
    const carrierUrl = await carrier.start();
    stack = await startStack({ tag: 'scheduled', workers: 2, env: { SMS_CARRIER_URL: carrierUrl } });
    tenant = await createTenant(stack.apis[0].baseUrl, { lines: ['PHONE_NUMBER'] });
  });
  afterAll(async () => {
    result.record();
    await stack?.stop();
    await carrier?.stop();
  });

  it('every scheduled message goes out once, through two worker crashes while they come due', async () => {
    const api = stack.apis[0];
    const first = Date.now() + DUE_IN_MS;
    result.load = `${fmt(MESSAGES)} send_sms with sendAt spread over ${SPREAD_MS / 1000} s, 1 api + 2 worker processes`;
    result.faults = 'SIGKILL of each worker while the messages come due, each restarted at once';
    const ids: string[] = new Array(MESSAGES);
    await runPool(MESSAGES, 8, async (i) => {
      const sendAt = new Date(first + Math.floor((i * SPREAD_MS) / MESSAGES)).toISOString();
      const { message } = await toolOk<{ message: { id: string; status: string } }>(api.baseUrl, tenant.apiKey, 'send_sms', {
        to: `+1777${String(1_000_000 + i).padStart(7, '0')}`,
        body: `scheduled ${i}`,
        sendAt,
      });
      expect(message.status).toBe('SCHEDULED');
      ids[i] = message.id;
    });
    expect(Date.now()).toBeLessThan(first);
    expect(carrier.carried).toHaveLength(0);

    const kills: string[] = [];
    for (const [index, at] of [
      [0, first + SPREAD_MS / 4],
      [1, first + SPREAD_MS / 2],
    ] as const) {
      await waitFor(() => Date.now() >= at, 'the kill time', 60_000, 20);
      const carried = carrier.carried.length;
      await stack.workers[index].stop('SIGKILL');
      const restartMs = await stack.workers[index].restart();
      kills.push(`worker ${index + 1} at ${fmt(carried)} carried, restarted in ${fmt(restartMs)} ms`);
    }

    const db = new Client({ connectionString: stack.databaseUrl });
    await db.connect();
    try {
      const started = Date.now();
      await waitFor(
        async () => {
          const r = await db.query(`SELECT count(*)::int AS n FROM messages WHERE id = ANY($1) AND status IN ('SENT', 'DELIVERED')`, [ids]);
          return r.rows[0].n === MESSAGES;
        },
        'every scheduled message SENT or DELIVERED',
        180_000,
        500,
      );
      const allSent = Date.now();
      const perMessage = carrier.perMessage();
      const twice = [...perMessage.values()].filter((n) => n > 1).length;
      const released = (
        await db.query(
          `SELECT data->'message'->>'id' AS id, count(*)::int AS n FROM outbox_events
            WHERE type = 'message.status_changed' AND data->>'previousStatus' = 'SCHEDULED' AND data->>'currentStatus' = 'QUEUED'
            GROUP BY 1`,
        )
      ).rows as Array<{ id: string; n: number }>;
      const releasedOnce = released.filter((r) => r.n === 1 && ids.includes(r.id)).length;
      const early = (await db.query(`SELECT count(*)::int AS n FROM messages WHERE id = ANY($1) AND sent_at < send_at`, [ids])).rows[0].n as number;
      result.figure('messages scheduled', fmt(MESSAGES));
      result.figure('worker kills', kills.join('; '));
      result.figure('carrier requests / distinct messages', `${fmt(carrier.carried.length)} / ${fmt(perMessage.size)}`);
      result.figure('messages released from SCHEDULED exactly once', `${fmt(releasedOnce)} of ${fmt(MESSAGES)}`);
      result.figure('messages handed to the carrier again after a kill (same Idempotency-Key)', fmt(twice));
      result.figure('messages sent before their time', fmt(early));
      result.figure('every message SENT, after the last restart', `${((allSent - started) / 1000).toFixed(1)} s`);
      result.lost = ids.filter((id) => !perMessage.has(id)).length;
      result.duplicates = `0 released twice; ${fmt(twice)} carrier requests repeated by a killed hand-off (same Idempotency-Key)`;
      result.notes.push(
        'A repeat is a hand-off the killed worker had made but not recorded: Bull retries the stalled job and the carrier gets the same ' +
          'Idempotency-Key again (the QUEUED hand-off as for any message; the release from SCHEDULED itself is one locked transaction).',
      );
      expect(releasedOnce).toBe(MESSAGES);
      expect(ids.filter((id) => !perMessage.has(id))).toEqual([]);
      expect(perMessage.size).toBe(MESSAGES);
      expect(early).toBe(0);
    } finally {
      await db.end();
    }
    result.passed = true;
  });
});
