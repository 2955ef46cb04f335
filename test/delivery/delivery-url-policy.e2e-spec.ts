import { HOST_RESOLVER } from '../../src/outbound-http/url-policy';
import { fixtureEvent } from '../fixtures/events';
import {
  attemptsOf,
  closeDeliveryTestApp,
  createDeliveryTestApp,
  deliveriesOf,
  DeliveryTestApp,
  hmacHex,
  MutableResolver,
  parseSignature,
  publish,
  register,
  requestsTo,
  waitForRequests,
  waitForStatus,
} from '../support/delivery';
import { TestReceiver } from '../support/receiver';
import { createSession, Session } from '../support/session';
import { waitUntil } from '../support/wait';

jest.setTimeout(30_000);

/**
 * The URL policy again at every attempt: resolve, check, then connect to the checked address.
 * The fake resolver's answers change between registration and delivery (DNS rebinding).
 */
describe('URL policy at send time', () => {
  let t: DeliveryTestApp;
  const resolver = new MutableResolver();
  const receiver = new TestReceiver();
  let port: number;
  let s: Session;

  beforeAll(async () => {
    port = Number(new URL(await receiver.start()).port);
    t = await createDeliveryTestApp({
      queueTag: 'urlpolicy',
      env: { DELIVERY_RETRY_SCHEDULE: '1s,1s' },
      overrides: (b) => b.overrideProvider(HOST_RESOLVER).useValue(resolver),
    });
    s = await createSession(t.admin);
  });
  afterAll(async () => {
    await closeDeliveryTestApp(t);
    await receiver.stop();
  });

  const event = () => fixtureEvent('contact.merged', { orgId: s.orgId, lineId: null });

  it('connects to the address the check approved, keeping the URL host in the Host header', async () => {
    // No real DNS knows this name: a request can only arrive through the pinned address.
    resolver.answers.set('hooks.example.test', ['127.0.0.1']);
    const { secret } = await register(t, s.apiKey, { url: `http://hooks.example.test:${port}/pinned`, events: ['contact.merged'] });
    const lookupsAtRegistration = resolver.calls.filter((h) => h === 'hooks.example.test').length;
    expect(lookupsAtRegistration).toBeGreaterThanOrEqual(1);

    await publish(t, event());
    const [req] = await waitForRequests(receiver, '/pinned', 1);
    expect(req.headers.host).toBe(`hooks.example.test:${port}`);
    const sig = parseSignature(req.headers['x-service-signature']);
    expect(sig.v1).toEqual([hmacHex(secret, sig.t, req.body)]);
    // The name was resolved (and checked) again for the attempt.
    expect(resolver.calls.filter((h) => h === 'hooks.example.test').length).toBeGreaterThan(lookupsAtRegistration);
  });

  it('a name that resolved publicly at registration and privately later is refused: a failed attempt (url_refused), nothing sent', async () => {
    resolver.answers.set('rebind.example.test', ['93.184.216.34']);
    const { endpoint } = await register(t, s.apiKey, { url: `http://rebind.example.test:${port}/rebind`, events: ['contact.merged'] });
    expect(endpoint.status).toBe('active');

    resolver.answers.set('rebind.example.test', ['10.0.0.5']);
    await publish(t, event());
    const delivery = await waitForStatus(t, endpoint.id, ['retrying', 'succeeded', 'failed']);
    expect(delivery.status).toBe('retrying');
    expect(delivery.last_status_code).toBeNull();
    expect(delivery.last_error).toMatch(/^url_refused: /);
    const [attempt] = await attemptsOf(t, delivery.id);
    expect(attempt).toMatchObject({ attempt_number: 1, status_code: null, error_kind: 'url_refused', response_body: null });
    const [endpointRow] = await t.db.query('SELECT consecutive_failures, failing_since FROM webhook_endpoints WHERE id = $1', [endpoint.id]);
    expect(endpointRow.consecutive_failures).toBe(1);
    expect(endpointRow.failing_since).not.toBeNull();

    // Mixed answers are refused too: every address must pass.
    resolver.answers.set('rebind.example.test', ['127.0.0.1', '10.0.0.5']);
    const two = await waitUntil(
      async () => {
        const rows = await attemptsOf(t, delivery.id);
        return rows.length >= 2 && rows;
      },
      'the second attempt',
      { timeoutMs: 5000 },
    );
    expect(two.map((a) => a.error_kind)).toEqual(['url_refused', 'url_refused']);
    expect(requestsTo(receiver, '/rebind')).toHaveLength(0);

    // The receiver was reachable all along: once the name answers an allowed address, the last retry arrives.
    resolver.answers.set('rebind.example.test', ['127.0.0.1']);
    const [req] = await waitForRequests(receiver, '/rebind', 1, 5000);
    expect(JSON.parse(req.body).id).toBe(delivery.event_id);
    const done = await waitForStatus(t, endpoint.id, ['succeeded', 'failed']);
    expect(done.status).toBe('succeeded');
    expect((await attemptsOf(t, delivery.id)).map((a) => [a.attempt_number, a.error_kind, a.status_code])).toEqual([
      [1, 'url_refused', null],
      [2, 'url_refused', null],
      [3, null, 200],
    ]);
    expect(await deliveriesOf(t, endpoint.id)).toHaveLength(1);
  });
});
