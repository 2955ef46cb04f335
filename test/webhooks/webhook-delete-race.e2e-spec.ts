import { fixtureData, fixtureEvent } from '../fixtures/events';
import { closeDeliveryTestApp, createDeliveryTestApp, DeliveryTestApp, publishAll, register, waitDeliveryIdle, waitRelayed } from '../support/delivery';
import { callTool } from '../support/mcp';
import { storePayload } from '../support/payloads';
import { buildEventData } from '../../src/delivery/payloads';
import { TestReceiver } from '../support/receiver';
import { createSession, Session } from '../support/session';
import { sleep, waitUntil } from '../support/wait';

/**
 * delete_webhook while the delivery engine records attempts of the same endpoint. Recording an
 * attempt touches the delivery row and the endpoint row (failure counter); deleting the endpoint
 * takes the endpoint row and then cascades to its deliveries. Taken in opposite orders, the two
 * deadlock and PostgreSQL aborts one: the caller then saw -32603 Internal error.
 */
describe('delete_webhook while attempts are being recorded', () => {
  let t: DeliveryTestApp;
  let s: Session;
  const receiver = new TestReceiver();
  let base: string;
  beforeAll(async () => {
    // Room for all 30 attempts of a round to be in flight at once (10 by default).
    t = await createDeliveryTestApp({ queueTag: 'delrace', env: { DELIVERY_ENDPOINT_CONCURRENCY: '30' } });
    base = await receiver.start();
    s = await createSession(t.admin, { tier: 'POWER' });
  });
  afterAll(async () => {
    await closeDeliveryTestApp(t);
    await receiver.stop();
  });

  it('always deletes, and nothing of the endpoint is left', async () => {
    const IN_FLIGHT = 30;
    for (let round = 0; round < 5; round += 1) {
      const path = `/race-${round}`;
      const { endpoint } = await register(t, s.apiKey, { url: `${base}${path}`, events: ['message.received'] });
      const [original] = await t.db.query(
        `INSERT INTO webhook_deliveries (event_id, endpoint_id, user_id, event_type, mode, payload_id, event_created_at, status)
         VALUES ('evt_' || md5(random()::text), $1, $2, 'message.received', 'concise', $3, now(), 'succeeded') RETURNING id`,
        [endpoint.id, s.userId, await storePayload(t.db, buildEventData('message.received', fixtureData('message.received'), 'concise', 0))],
      );
      // Every attempt is held by the receiver until all are in flight, then they fail (500) at once.
      let release = () => {};
      const released = new Promise<void>((resolve) => (release = resolve));
      receiver.respond = () => ({ status: 500, until: released });
      const resent = await Promise.all(Array.from({ length: IN_FLIGHT }, () => callTool(t, s.apiKey, 'resend_webhook_delivery', { deliveryId: original.id })));
      expect(resent.filter((r) => r.isError)).toEqual([]);
      // Generous: on a busy machine the 30 resends take a while to reach the receiver.
      await waitUntil(() => receiver.requests.filter((r) => r.url === path).length === IN_FLIGHT, `${IN_FLIGHT} attempts in flight`, { timeoutMs: 60_000 });

      release();
      await sleep(round * 2); // a different interleaving of the deletion and the recordings each round
      const deleted = await callTool(t, s.apiKey, 'delete_webhook', { endpointId: endpoint.id });
      expect(deleted).toEqual({
        content: [{ type: 'text', text: JSON.stringify({ deleted: true, endpointId: endpoint.id }) }],
        structuredContent: { deleted: true, endpointId: endpoint.id },
      });
      const [{ endpoints }] = await t.db.query('SELECT count(*)::int AS endpoints FROM webhook_endpoints WHERE id = $1', [endpoint.id]);
      const [{ deliveries }] = await t.db.query('SELECT count(*)::int AS deliveries FROM webhook_deliveries WHERE endpoint_id = $1', [endpoint.id]);
      expect({ endpoints, deliveries }).toEqual({ endpoints: 0, deliveries: 0 });
    }
  }, 300_000);
});

/**
 * update_webhook status disabled while the worker claims and records a burst for the endpoint.
 * Disabling cancels the endpoint's waiting deliveries; a claim batch locks some of those rows in
 * its own order, and a success that ends a failing run must lock the endpoint. Found by the
 * failure-isolation benchmark as -32603 (deadlock detected) from update_webhook, with both cores
 * saturated; on a quiet machine this test seldom meets that timing, so it guards the outcome
 * (the disable always succeeds and leaves nothing waiting) more than it reproduces the race.
 */
describe('update_webhook disabling while a burst is being delivered', () => {
  let t: DeliveryTestApp;
  let s: Session;
  const receiver = new TestReceiver();
  let base: string;
  beforeAll(async () => {
    t = await createDeliveryTestApp({ queueTag: 'disrace', env: { DELIVERY_RETRY_SCHEDULE: '200ms,200ms,200ms', DELIVERY_ENDPOINT_CONCURRENCY: '100' } });
    base = await receiver.start();
    s = await createSession(t.admin, { tier: 'POWER' });
  });
  afterAll(async () => {
    await closeDeliveryTestApp(t);
    await receiver.stop();
  });

  it('always disables, and leaves nothing of the endpoint waiting', async () => {
    for (let round = 0; round < 4; round += 1) {
      const path = `/disable-race-${round}`;
      const { endpoint } = await register(t, s.apiKey, { url: `${base}${path}`, events: ['contact.merged'] });
      let n = 0;
      receiver.respond = () => ({ status: ++n % 3 === 0 ? 200 : 500, delayMs: 5 }); // failing runs that successes keep ending
      const burst = await publishAll(
        t,
        Array.from({ length: 2000 }, () => fixtureEvent('contact.merged', { orgId: s.orgId, lineId: null })),
      );
      // The state the race needs is "attempts of the burst are arriving", however long a busy
      // machine takes to get there (it took more than 10 s under load).
      await waitUntil(() => receiver.requests.filter((r) => r.url === path).length >= 100 + round * 50, 'the burst under way', { timeoutMs: 60_000 });

      const disabled = await callTool(t, s.apiKey, 'update_webhook', { endpointId: endpoint.id, status: 'disabled' });
      expect(disabled.isError).toBeFalsy();
      expect(disabled.structuredContent).toMatchObject({ endpoint: { id: endpoint.id, status: 'disabled' } });
      // Once the rest of the burst is relayed and the worker has run every job it had (attempts on
      // the wire when it was disabled, deliveries a relay batch made meanwhile), nothing of the
      // endpoint may be left waiting.
      await waitRelayed(t, burst, 60_000);
      await waitDeliveryIdle(t, 60_000);
      const [{ waiting }] = await t.db.query(
        `SELECT count(*)::int AS waiting FROM webhook_deliveries WHERE endpoint_id = $1 AND status IN ('pending', 'retrying')`,
        [endpoint.id],
      );
      expect(waiting).toBe(0);
    }
  }, 600_000);
});
