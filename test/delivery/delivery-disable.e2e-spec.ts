import { Clock } from '../../src/common/clock';
import { WebhooksService } from '../../src/webhooks/webhooks.service';
import { fixtureEvent } from '../fixtures/events';
import {
  afterPendingRetries,
  attemptsOf,
  closeDeliveryTestApp,
  createDeliveryTestApp,
  deliveriesOf,
  DeliveryTestApp,
  FakeClock,
  publish,
  publishAll,
  register,
  requestsTo,
  routeResponses,
  waitForRequests,
  waitDeliveryIdle,
  waitForStatus,
  waitRelayed,
} from '../support/delivery';
import { toolOk } from '../support/mcp';
import { TestReceiver } from '../support/receiver';
import { createSession, Session } from '../support/session';
import { waitUntil } from '../support/wait';

jest.setTimeout(30_000);

const RETRY_MS = 2000;
const HOUR_MS = 3_600_000;

/** Auto-disable (by count, by 24 h on the injected clock), re-enabling, and cancelling waiting retries. */
describe('auto-disable and cancelling', () => {
  let t: DeliveryTestApp;
  const clock = new FakeClock();
  const receiver = new TestReceiver();
  const routes = routeResponses(receiver);
  let base: string;
  let s: Session;
  let n = 0;

  beforeAll(async () => {
    base = await receiver.start();
    t = await createDeliveryTestApp({
      queueTag: 'disable',
      env: { DELIVERY_RETRY_SCHEDULE: `${RETRY_MS}ms,${RETRY_MS}ms,${RETRY_MS}ms` },
      overrides: (b) => b.overrideProvider(Clock).useValue(clock),
    });
    s = await createSession(t.admin, { tier: 'POWER' });
  });
  afterAll(async () => {
    await closeDeliveryTestApp(t);
    await receiver.stop();
  });
  beforeEach(() => {
    clock.offsetMs = 0;
  });

  /** An endpoint on its own path whose receiver answers `status` until told otherwise. */
  async function failingEndpoint(name: string, status = 500) {
    const path = `/${name}-${++n}`;
    routes.set(path, () => ({ status, body: 'nope' }));
    const { endpoint } = await register(t, s.apiKey, { url: `${base}${path}`, events: ['contact.merged'] });
    return { id: endpoint.id, path };
  }
  const event = () => fixtureEvent('contact.merged', { orgId: s.orgId, lineId: null });
  const attemptsOfEndpoint = async (id: string): Promise<number> =>
    (
      await t.db.query(
        'SELECT count(*)::int AS n FROM webhook_delivery_attempt_log a JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.endpoint_id = $1',
        [id],
      )
    )[0].n;

  async function endpointRow(
    id: string,
  ): Promise<{ status: string; consecutive_failures: number; failing_since: Date | null; disabled_reason: string | null }> {
    const [row] = await t.db.query('SELECT status, consecutive_failures, failing_since, disabled_reason FROM webhook_endpoints WHERE id = $1', [id]);
    return row;
  }
  const getWebhook = async (id: string) => (await toolOk(t, s.apiKey, 'get_webhook', { endpointId: id })).endpoint;

  it('disables the endpoint at 100 consecutive failures and cancels its waiting deliveries', async () => {
    const ep = await failingEndpoint('count');
    await publish(t, event());
    const waiting = await waitForStatus(t, ep.id, ['retrying']);
    expect((await endpointRow(ep.id)).consecutive_failures).toBe(1);

    await t.db.query('UPDATE webhook_endpoints SET consecutive_failures = 99 WHERE id = $1', [ep.id]);
    await publish(t, event());
    await waitForRequests(receiver, ep.path, 2);
    await waitUntil(async () => (await endpointRow(ep.id)).status === 'disabled', 'the endpoint to be disabled', { timeoutMs: 5000 });

    const row = await endpointRow(ep.id);
    expect(row.consecutive_failures).toBe(100);
    const view = await getWebhook(ep.id);
    expect(view.status).toBe('disabled');
    expect(view.disabledReason).toMatch(/100 consecutive failed/);

    const deliveries = await deliveriesOf(t, ep.id);
    expect(deliveries).toHaveLength(2);
    for (const d of deliveries) {
      expect(d.status).toBe('cancelled');
      expect(d.next_attempt_at).toBeNull();
    }
    expect(deliveries.map((d) => d.id)).toContain(waiting.id);
    // The second event's failed attempt was recorded before the disable.
    const second = deliveries.find((d) => d.id !== waiting.id)!;
    expect((await attemptsOf(t, second.id)).map((a) => a.status_code)).toEqual([500]);

    // No retry follows.
    await afterPendingRetries(t);
    expect(requestsTo(receiver, ep.path)).toHaveLength(2);
    expect((await attemptsOf(t, waiting.id)).map((a) => a.attempt_number)).toEqual([1]);
  });

  it('counts every failure of a burst that the worker records together (40 at once: count 40, 40 attempt rows)', async () => {
    const ep = await failingEndpoint('burst');
    await publishAll(t, Array.from({ length: 40 }, event));
    await waitUntil(async () => (await attemptsOfEndpoint(ep.id)) === 40, '40 recorded attempts', { timeoutMs: 10_000 });
    const row = await endpointRow(ep.id);
    expect(row).toMatchObject({ status: 'active', consecutive_failures: 40 });
    const deliveries = await deliveriesOf(t, ep.id);
    expect(deliveries.map((d) => d.status)).toEqual(Array(40).fill('retrying'));
  });

  it('a burst that crosses 100 disables the endpoint and cancels the whole burst, none left retrying', async () => {
    const ep = await failingEndpoint('cross');
    await t.db.query('UPDATE webhook_endpoints SET consecutive_failures = 95, failing_since = now() WHERE id = $1', [ep.id]);
    await publishAll(t, Array.from({ length: 20 }, event));
    await waitUntil(async () => (await endpointRow(ep.id)).status === 'disabled', 'the endpoint to be disabled', { timeoutMs: 10_000 });
    // Attempts already on the wire when it was disabled are still recorded: wait until the worker has run them all.
    await waitDeliveryIdle(t);
    const row = await endpointRow(ep.id);
    expect(row.consecutive_failures).toBeGreaterThanOrEqual(100);
    expect(row.disabled_reason).toMatch(/consecutive failed delivery attempts/);
    const statuses = (await deliveriesOf(t, ep.id)).map((d) => d.status);
    expect(statuses).toHaveLength(20);
    expect(statuses.filter((st) => st === 'retrying' || st === 'pending')).toEqual([]);
    expect(statuses).toContain('cancelled');
  });

  it('disables the endpoint when a failure comes 24 h or more after its failing run began (on the injected clock)', async () => {
    const ep = await failingEndpoint('24h');
    clock.offsetMs = 3 * 24 * HOUR_MS; // far from real time, so only the injected clock can explain the outcome

    // 23 h into the run on the service clock (but 49 h before real time): not yet.
    const run23h = new Date(clock.now().getTime() - 23 * HOUR_MS);
    await t.db.query('UPDATE webhook_endpoints SET consecutive_failures = 5, failing_since = $2 WHERE id = $1', [ep.id, run23h]);
    await publish(t, event());
    await waitForStatus(t, ep.id, ['retrying', 'cancelled']);
    let row = await endpointRow(ep.id);
    expect(row.status).toBe('active');
    expect(row.consecutive_failures).toBe(6);
    expect(row.failing_since!.getTime()).toBe(run23h.getTime());

    // 25 h into the run: the next failure disables.
    const run25h = new Date(clock.now().getTime() - 25 * HOUR_MS);
    await t.db.query('UPDATE webhook_endpoints SET failing_since = $2 WHERE id = $1', [ep.id, run25h]);
    await publish(t, event());
    await waitForRequests(receiver, ep.path, 2);
    await waitUntil(async () => (await endpointRow(ep.id)).status === 'disabled', 'the endpoint to be disabled', { timeoutMs: 5000 });
    row = await endpointRow(ep.id);
    expect(row.consecutive_failures).toBe(7);
    const view = await getWebhook(ep.id);
    expect(view.disabledReason).toMatch(/failing continuously since/);
    expect(view.disabledReason).toContain(run25h.toISOString());
    expect((await deliveriesOf(t, ep.id)).map((d) => d.status)).toEqual(['cancelled', 'cancelled']);
  });

  it('re-enabling with update_webhook status active resets the counters and deliveries flow again', async () => {
    const ep = await failingEndpoint('reenable');
    await t.db.query("UPDATE webhook_endpoints SET consecutive_failures = 99, failing_since = now() - interval '1 hour' WHERE id = $1", [ep.id]);
    await publish(t, event());
    await waitUntil(async () => (await endpointRow(ep.id)).status === 'disabled', 'the endpoint to be disabled', { timeoutMs: 5000 });

    // Disabled: a new event gets no delivery at all (its fan-out has run and made none).
    await waitRelayed(t, [await publish(t, event())]);
    expect(await deliveriesOf(t, ep.id)).toHaveLength(1);

    const updated = await toolOk(t, s.apiKey, 'update_webhook', { endpointId: ep.id, status: 'active' });
    expect(updated.endpoint).toMatchObject({ status: 'active', disabledReason: null });
    expect(await endpointRow(ep.id)).toMatchObject({ status: 'active', consecutive_failures: 0, failing_since: null, disabled_reason: null });

    routes.set(ep.path, () => ({ status: 200, body: 'back' }));
    await publish(t, event());
    // The event of the disabled time would have gone out before this one: the second request is this one.
    const [, second] = await waitForRequests(receiver, ep.path, 2);
    const delivered = await waitForStatus(t, ep.id, ['succeeded']);
    expect(delivered.attempt_count).toBe(1);
    expect(JSON.parse(second.body).id).toBe(delivered.event_id);
    expect(requestsTo(receiver, ep.path)).toHaveLength(2);
    expect((await endpointRow(ep.id)).consecutive_failures).toBe(0);
  });

  it('re-enabled, a failure counts from 1 again (not from the old count)', async () => {
    const ep = await failingEndpoint('recount');
    await t.db.query(`UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = 'test', consecutive_failures = 100 WHERE id = $1`, [ep.id]);
    await toolOk(t, s.apiKey, 'update_webhook', { endpointId: ep.id, status: 'active' });
    await publish(t, event());
    await waitForStatus(t, ep.id, ['retrying']);
    expect(await endpointRow(ep.id)).toMatchObject({ status: 'active', consecutive_failures: 1 });
  });

  it('a 2xx resets consecutive_failures to 0 and ends the failing run', async () => {
    const ep = await failingEndpoint('reset', 200);
    await t.db.query(`UPDATE webhook_endpoints SET consecutive_failures = 42, failing_since = now() - interval '20 hours' WHERE id = $1`, [ep.id]);
    await publish(t, event());
    await waitForStatus(t, ep.id, ['succeeded']);
    await waitUntil(async () => (await endpointRow(ep.id)).consecutive_failures === 0, 'the counter to reset');
    expect(await endpointRow(ep.id)).toMatchObject({ status: 'active', consecutive_failures: 0, failing_since: null });
  });

  it('a 2xx that was already on its way when a failure began the run still ends it', async () => {
    // Both attempts are claimed while the endpoint is healthy; the first is answered 200 after
    // 400 ms, the second 500 at once, so the failure is recorded first and the success last.
    const path = `/late-success-${++n}`;
    let seen = 0;
    routes.set(path, () => (++seen === 1 ? { status: 200, body: 'ok', delayMs: 400 } : { status: 500, body: 'nope' }));
    const { endpoint } = await register(t, s.apiKey, { url: `${base}${path}`, events: ['contact.merged'] });
    await publishAll(t, [event(), event()]);
    await waitUntil(async () => (await attemptsOfEndpoint(endpoint.id)) === 2, 'both attempts recorded', { timeoutMs: 5000 });
    await waitUntil(async () => (await endpointRow(endpoint.id)).consecutive_failures === 0, 'the failing run to end', { timeoutMs: 2000 });
    expect(await endpointRow(endpoint.id)).toMatchObject({ status: 'active', consecutive_failures: 0, failing_since: null });
    expect((await deliveriesOf(t, endpoint.id)).map((d) => d.status).sort()).toEqual(['retrying', 'succeeded']);
  });

  it('ending the runs of several endpoints never holds one while waiting for another: a failure batch is not aborted as a deadlock', async () => {
    // A failure batch locks its endpoints in id order. Ending runs after a success batch once
    // locked them in one UPDATE, in whatever order its plan met them: holding the second while
    // waiting for the first, it deadlocked with a failure batch holding the first, and PostgreSQL
    // aborted one of the two, losing the record of attempts already sent (the replicas
    // reliability run saw 17). Now each run is ended by a statement of its own.
    const own = await createSession(t.admin, { tier: 'POWER' }); // the shared session is near its endpoint cap
    const endpointId = async () => (await register(t, own.apiKey, { url: `${base}/order-${++n}`, events: ['contact.merged'] })).endpoint.id;
    const [first, second] = [await endpointId(), await endpointId()].sort();
    // Both in a failing run; `first` written last, so a scan of the table meets `second` first.
    for (const id of [second, first]) {
      await t.db.query(`UPDATE webhook_endpoints SET consecutive_failures = 3, failing_since = now() - interval '1 hour' WHERE id = $1`, [id]);
    }
    const failureBatch = t.db.createQueryRunner();
    await failureBatch.connect();
    try {
      await failureBatch.startTransaction();
      await failureBatch.query('SELECT id FROM webhook_endpoints WHERE id = $1 FOR NO KEY UPDATE', [first]);
      const answeredAt = new Date();
      const ending = t.app.get(WebhooksService).endRunsAnsweredBefore(
        new Map([
          [second, answeredAt],
          [first, answeredAt],
        ]),
      );
      const settled = ending.then(
        () => 'ended',
        (error: Error) => error.message,
      );
      await waitUntil(
        async () =>
          (
            await t.db.query(
              `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%SET consecutive_failures = 0%'`,
            )
          )[0].n === 1,
        'the statement ending the runs to wait for the first endpoint',
      );
      await failureBatch.query('SELECT id FROM webhook_endpoints WHERE id = $1 FOR NO KEY UPDATE', [second]);
      await failureBatch.commitTransaction();
      expect(await settled).toBe('ended');
    } finally {
      if (failureBatch.isTransactionActive) await failureBatch.rollbackTransaction();
      await failureBatch.release();
    }
    expect(await endpointRow(first)).toMatchObject({ consecutive_failures: 0, failing_since: null });
    expect(await endpointRow(second)).toMatchObject({ consecutive_failures: 0, failing_since: null });
  });

  it('update_webhook status disabled cancels a delivery waiting for its retry; no further request', async () => {
    const ep = await failingEndpoint('cancel-disable');
    await publish(t, event());
    const waiting = await waitForStatus(t, ep.id, ['retrying']);
    const updated = await toolOk(t, s.apiKey, 'update_webhook', { endpointId: ep.id, status: 'disabled' });
    expect(updated.endpoint.status).toBe('disabled');

    const [row] = await deliveriesOf(t, ep.id);
    expect(row).toMatchObject({ id: waiting.id, status: 'cancelled', next_attempt_at: null, attempt_count: 1 });
    const list = await toolOk(t, s.apiKey, 'list_webhook_deliveries', { endpointId: ep.id });
    expect(list.deliveries).toEqual([expect.objectContaining({ id: waiting.id, status: 'cancelled', attempts: 1, nextAttemptAt: null })]);

    await afterPendingRetries(t);
    expect(requestsTo(receiver, ep.path)).toHaveLength(1);
    expect((await deliveriesOf(t, ep.id))[0].status).toBe('cancelled');
  });

  it('delete_webhook removes the endpoint with its deliveries; the waiting retry never goes out', async () => {
    const ep = await failingEndpoint('cancel-delete');
    await publish(t, event());
    const waiting = await waitForStatus(t, ep.id, ['retrying']);
    await toolOk(t, s.apiKey, 'delete_webhook', { endpointId: ep.id });

    expect(await deliveriesOf(t, ep.id)).toHaveLength(0);
    expect(await attemptsOf(t, waiting.id)).toHaveLength(0);
    const [{ count }] = await t.db.query('SELECT count(*)::int AS count FROM webhook_endpoints WHERE id = $1', [ep.id]);
    expect(count).toBe(0);

    await afterPendingRetries(t);
    expect(requestsTo(receiver, ep.path)).toHaveLength(1);
  });
});
