import { fixtureEvent } from '../fixtures/events';
import {
  attemptsOf,
  closeDeliveryTestApp,
  createDeliveryTestApp,
  DeliveryTestApp,
  deleteRegisteredEndpoints,
  publish,
  register,
  routeResponses,
  waitForRequests,
  waitForStatus,
} from '../support/delivery';
import { TestReceiver } from '../support/receiver';
import { createSession, Session } from '../support/session';
import { waitUntil } from '../support/wait';

/** DELIVERY_RETRY_SCHEDULE: two short steps, then a last one that caps any Retry-After. */
const STEP_MS = 300;
const LAST_STEP_MS = 4000;

/**
 * A receiver's 429 or 503 with Retry-After postpones the delivery's next attempt to at least
 * that time, capped at the schedule's last step; the attempt counts like any failure. Checked
 * in the delivery row (next_attempt_at, last_error) and at the receiver (when the retry came).
 */
jest.setTimeout(30_000);

describe('Retry-After from a receiver', () => {
  let t: DeliveryTestApp;
  const receiver = new TestReceiver();
  const responders = routeResponses(receiver);
  let base: string;
  let s: Session;
  let n = 0;

  beforeAll(async () => {
    base = await receiver.start();
    t = await createDeliveryTestApp({
      queueTag: 'retry-after',
      env: { DELIVERY_RETRY_SCHEDULE: `${STEP_MS}ms,${STEP_MS}ms,${LAST_STEP_MS}ms` },
    });
    s = await createSession(t.admin, { tier: 'POWER' });
  });
  afterAll(async () => {
    await closeDeliveryTestApp(t);
    await receiver.stop();
  });
  afterEach(() => deleteRegisteredEndpoints(t));

  /** Registers a fresh path answering `first` to the first request and 200 after; publishes one event. */
  async function deliverOne(first: { status: number; headers?: Record<string, string> }): Promise<{ endpointId: string; path: string }> {
    const path = `/retry-after-${++n}`;
    responders.set(path, (seen) => (seen === 1 ? { status: first.status, body: 'later', headers: first.headers } : { status: 200, body: 'ok' }));
    const { endpoint } = await register(t, s.apiKey, { url: `${base}${path}`, events: ['contact.merged'] });
    await publish(t, fixtureEvent('contact.merged', { orgId: s.orgId, lineId: null }));
    return { endpointId: endpoint.id, path };
  }

  /** The first attempt's failure as recorded: the wait it set before the next attempt, and the error. */
  async function firstFailure(endpointId: string): Promise<{ waitMs: number; lastError: string | null; deliveryId: string }> {
    const delivery = await waitForStatus(t, endpointId, ['retrying', 'succeeded', 'failed']);
    expect(delivery.status).toBe('retrying');
    const [attempt] = await attemptsOf(t, delivery.id);
    return { waitMs: delivery.next_attempt_at!.getTime() - new Date(attempt.attempted_at).getTime(), lastError: delivery.last_error, deliveryId: delivery.id };
  }

  it('503 with Retry-After: 2 puts the next attempt 2 s later, and that attempt is the second', async () => {
    const { endpointId, path } = await deliverOne({ status: 503, headers: { 'retry-after': '2' } });
    const { waitMs, lastError, deliveryId } = await firstFailure(endpointId);
    expect(waitMs).toBeGreaterThanOrEqual(2000 - 50);
    expect(waitMs).toBeLessThanOrEqual(2000 + 150);
    expect(lastError).toBe('HTTP 503 (Retry-After: 2 s)');
    const [first, second] = await waitForRequests(receiver, path, 2, 8000);
    expect(second.receivedAt - first.receivedAt).toBeGreaterThanOrEqual(2000 - 50);
    const delivery = await waitForStatus(t, endpointId, ['succeeded']);
    expect(delivery.attempt_count).toBe(2);
    expect((await attemptsOf(t, deliveryId)).map((a) => a.status_code)).toEqual([503, 200]);
  });

  it("429 with an HTTP date a day away waits only the schedule's last step", async () => {
    const tomorrow = new Date(Date.now() + 86_400_000).toUTCString();
    const { endpointId } = await deliverOne({ status: 429, headers: { 'retry-after': tomorrow } });
    const { waitMs, lastError } = await firstFailure(endpointId);
    expect(waitMs).toBeGreaterThanOrEqual(LAST_STEP_MS - 50);
    expect(waitMs).toBeLessThanOrEqual(LAST_STEP_MS + 150);
    expect(lastError).toMatch(/^HTTP 429 \(Retry-After: \d+ s\)$/);
  });

  it.each([
    ['a 500 with Retry-After', 500, '2', 'HTTP 500'],
    ['a 503 asking for less than the step', 503, '0', 'HTTP 503 (Retry-After: 0 s)'],
    ['a 503 with a malformed Retry-After', 503, 'in a while', 'HTTP 503'],
  ])('%s keeps the schedule', async (_name, status, value, error) => {
    const { endpointId, path } = await deliverOne({ status, headers: { 'retry-after': value } });
    const { waitMs, lastError } = await firstFailure(endpointId);
    expect(waitMs).toBeGreaterThanOrEqual(STEP_MS - 50);
    expect(waitMs).toBeLessThanOrEqual(STEP_MS + 150);
    expect(lastError).toBe(error);
    await waitForRequests(receiver, path, 2, 5000);
  });

  it('Retry-After on the last allowed attempt does not buy another one', async () => {
    const path = `/retry-after-${++n}`;
    responders.set(path, () => ({ status: 503, body: 'down', headers: { 'retry-after': '1' } }));
    const { endpoint } = await register(t, s.apiKey, { url: `${base}${path}`, events: ['contact.merged'] });
    await publish(t, fixtureEvent('contact.merged', { orgId: s.orgId, lineId: null }));
    // Attempts 1 to 4 (1 + the schedule's 3 steps); each waits at least 1 s, the last step 4 s.
    const failed = await waitForStatus(t, endpoint.id, ['failed'], 15_000);
    expect(failed.attempt_count).toBe(4);
    expect(failed.next_attempt_at).toBeNull();
    await waitUntil(async () => (await attemptsOf(t, failed.id)).length === 4, 'four attempts recorded');
  });
});
