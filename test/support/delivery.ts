import { createHmac } from 'node:crypto';
import { createServer } from 'node:net';
import { AddressInfo } from 'node:net';
import { TestingModuleBuilder } from '@nestjs/testing';
import { DataSource } from 'typeorm';
import { Clock } from '../../src/common/clock';
import { DeliveryQueue } from '../../src/delivery/delivery-queue';
import { DeliveryProcessor } from '../../src/delivery/delivery.processor';
import { DomainEvent } from '../../src/events/domain-event';
import { EventBus } from '../../src/events/event-bus';
import { HostResolver } from '../../src/outbound-http/url-policy';
import { createTestApp, TestApp, TestEnv } from './app';
import { toolOk } from './mcp';
import { fixtureEvent } from '../fixtures/events';
import { Answer, ReceivedRequest, TestReceiver } from './receiver';
import { createSession } from './session';
import { waitUntil } from './wait';
import { runQueuePrefix } from './test-env';

/**
 * Helpers for the delivery e2e tests: an app whose receivers may live on 127.0.0.1, publishing
 * on the bus, waiting for rows and requests, and an HMAC written out independently of src/.
 */

export interface DeliveryTestApp extends TestApp {
  db: DataSource;
  bus: EventBus;
  /** Endpoint ids registered through `register`, so afterAll can stop their waiting retries. */
  endpointIds: string[];
}

export interface DeliveryAppOptions {
  /** Suffix of the Bull key prefix: keeps this file's jobs apart from other files' leftovers. */
  queueTag: string;
  env?: TestEnv;
  overrides?: (builder: TestingModuleBuilder) => TestingModuleBuilder;
}

/** The env a delivery test runs under: development (http://) and loopback receivers allowed. */
export function deliveryEnv(queueTag: string, env: TestEnv = {}): TestEnv {
  return {
    APP_ENV: 'development',
    WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8',
    MCP_ALLOWED_ORIGINS: '',
    QUEUE_PREFIX: runQueuePrefix(queueTag),
    ...env,
  };
}

/** Boots the whole service under the delivery env. */
export async function createDeliveryTestApp(options: DeliveryAppOptions): Promise<DeliveryTestApp> {
  const t = await createTestApp({ env: deliveryEnv(options.queueTag, options.env), overrides: options.overrides });
  return { ...t, db: t.app.get(DataSource), bus: t.app.get(EventBus), endpointIds: [] };
}

/** Cancels what the file's endpoints still have waiting, then closes the app. */
export async function closeDeliveryTestApp(t: DeliveryTestApp | undefined): Promise<void> {
  if (!t) return;
  if (t.endpointIds.length > 0) {
    await t.db
      .query(
        `UPDATE webhook_deliveries SET status = 'cancelled', next_attempt_at = NULL WHERE endpoint_id = ANY($1::uuid[]) AND status IN ('pending', 'retrying')`,
        [t.endpointIds],
      )
      .catch(() => undefined);
  }
  await t.close();
}

/** Deletes the endpoints registered so far (deliveries and all): a finished test's endpoints stop retrying, and the cap of 10 per user is free again. */
export async function deleteRegisteredEndpoints(t: DeliveryTestApp): Promise<void> {
  const ids = t.endpointIds.splice(0);
  if (ids.length > 0) await t.db.query('DELETE FROM webhook_endpoints WHERE id = ANY($1::uuid[])', [ids]);
}

/** A Clock whose time is the real time moved by `offsetMs`. */
export class FakeClock extends Clock {
  offsetMs = 0;
  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }
}

/** A resolver whose answers a test changes at will; names it was not told about answer a public address. */
export class MutableResolver implements HostResolver {
  readonly answers = new Map<string, string[]>();
  readonly calls: string[] = [];
  async resolve(host: string): Promise<string[]> {
    this.calls.push(host);
    return this.answers.get(host.toLowerCase()) ?? ['93.184.216.34'];
  }
}

/** Publishes one event in its own transaction; returns the outbox id. */
export async function publish(t: DeliveryTestApp, event: DomainEvent): Promise<string> {
  return t.db.transaction((manager) => t.bus.publish(event, manager));
}

export async function publishAll(t: DeliveryTestApp, events: DomainEvent[]): Promise<string[]> {
  return t.db.transaction((manager) => t.bus.publishAll(events, manager));
}

export interface Registered {
  endpoint: { id: string; url: string; status: string; disabledReason: string | null; publicKey: string | null; [key: string]: unknown };
  secret: string;
  /** The secret in Standard Webhooks form (whsec_). */
  signingSecret: string;
}

/** register_webhook through the JSON-RPC endpoint (supertest); the endpoint is tracked for cleanup. */
export async function register(t: DeliveryTestApp, apiKey: string, args: Record<string, unknown>): Promise<Registered> {
  const answer = await toolOk<Registered>(t, apiKey, 'register_webhook', args);
  t.endpointIds.push(answer.endpoint.id);
  return answer;
}

/**
 * Waits out a retry window without a fixed sleep, to show that a retry did not come. A sentinel
 * endpoint (its own user and receiver) fails its first attempt, made now, and gets its retry one
 * retry delay later (the first step of DELIVERY_RETRY_SCHEDULE). Bull runs delayed jobs in the
 * order they fall due, so once the sentinel's retry has arrived, any retry that was due one delay
 * after an earlier attempt has been run too. Assumes equal steps in the file's retry schedule.
 */
export async function afterPendingRetries(t: DeliveryTestApp): Promise<void> {
  const sentinel = new TestReceiver();
  sentinel.respond = () => (sentinel.requests.length === 1 ? { status: 500, body: 'not yet' } : { status: 200, body: 'ok' });
  const base = await sentinel.start();
  try {
    const s = await createSession(t.admin, { lines: ['EMAIL_ACCOUNT'] });
    await register(t, s.apiKey, { url: `${base}/sentinel`, events: ['contact.merged'] });
    await publish(t, fixtureEvent('contact.merged', { orgId: s.orgId, lineId: null }));
    await waitForRequests(sentinel, '/sentinel', 2);
  } finally {
    await sentinel.stop();
  }
}

/**
 * Waits until the delivery engine of this app has nothing to run now: no attempt job waiting or
 * running, and none parked or waiting for a slot in the worker. Delayed jobs (retries) may remain; a delivery whose
 * retry is still to come shows as 'retrying'.
 */
export async function waitDeliveryIdle(t: DeliveryTestApp, timeoutMs = 15_000): Promise<void> {
  const queue = t.app.get(DeliveryQueue).queue;
  const processor = t.app.get(DeliveryProcessor);
  await waitUntil(
    async () => {
      const counts = await queue.getJobCounts();
      return counts.waiting + counts.active === 0 && processor.parkedCount() === 0 && processor.waitingCount() === 0;
    },
    'the delivery queue to be idle',
    { timeoutMs },
  );
}

/** Waits until the relay has handed these outbox rows to the subscribers (fan-out has run and committed). */
export async function waitRelayed(t: DeliveryTestApp, outboxIds: string[], timeoutMs = 10_000): Promise<void> {
  await waitUntil(
    async () => {
      const [{ pending }] = await t.db.query(`SELECT count(*)::int AS pending FROM outbox_events WHERE id = ANY($1::bigint[]) AND relayed_at IS NULL`, [
        outboxIds,
      ]);
      return pending === 0;
    },
    `outbox rows ${outboxIds.join(',')} to be relayed`,
    { timeoutMs },
  );
}

export interface DeliveryRow {
  id: string;
  event_id: string;
  endpoint_id: string;
  source_event_id: string | null;
  resent_from_id: string | null;
  event_type: string;
  mode: string;
  status: string;
  attempt_count: number;
  last_status_code: number | null;
  last_error: string | null;
  next_attempt_at: Date | null;
  last_attempt_at: Date | null;
  event_created_at: Date;
  /** The attempt that succeeded, recorded on the row (migration SuccessOnDelivery); null otherwise. */
  success_duration_ms: number | null;
  success_response_body: string | null;
}

export async function deliveriesOf(t: DeliveryTestApp, endpointId: string): Promise<DeliveryRow[]> {
  return t.db.query(`SELECT * FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY created_at, id`, [endpointId]);
}

export async function deliveriesOfEvent(t: DeliveryTestApp, outboxId: string): Promise<DeliveryRow[]> {
  return t.db.query(`SELECT * FROM webhook_deliveries WHERE source_event_id = $1 ORDER BY created_at, id`, [outboxId]);
}

export interface AttemptRow {
  attempt_number: number;
  attempted_at: Date;
  duration_ms: number;
  status_code: number | null;
  error_kind: string | null;
  response_body: string | null;
}

/** Every attempt of a delivery: its attempt rows and the success on its own row (the view webhook_delivery_attempt_log). */
export async function attemptsOf(t: DeliveryTestApp, deliveryId: string): Promise<AttemptRow[]> {
  return t.db.query(
    `SELECT attempt_number, attempted_at, duration_ms, status_code, error_kind, response_body
       FROM webhook_delivery_attempt_log WHERE delivery_id = $1 ORDER BY attempt_number`,
    [deliveryId],
  );
}

/** Waits for the delivery row of (outbox event, endpoint) to reach one of `statuses`. */
export async function waitForStatus(t: DeliveryTestApp, endpointId: string, statuses: string[], timeoutMs = 10_000): Promise<DeliveryRow> {
  return waitUntil(
    async () => (await deliveriesOf(t, endpointId)).find((d) => statuses.includes(d.status)),
    `a delivery of endpoint ${endpointId} in status ${statuses.join('|')}`,
    { timeoutMs },
  );
}

/** The requests a receiver got on one path. */
export function requestsTo(receiver: TestReceiver, path: string): ReceivedRequest[] {
  return receiver.requests.filter((r) => r.url === path);
}

export async function waitForRequests(receiver: TestReceiver, path: string, count: number, timeoutMs = 10_000): Promise<ReceivedRequest[]> {
  await waitUntil(
    () => requestsTo(receiver, path).length >= count,
    () => `${count} request(s) on ${path} (got ${requestsTo(receiver, path).length})`,
    { timeoutMs, intervalMs: 20 },
  );
  return requestsTo(receiver, path);
}

/** The spec's signature, written out with node:crypto: hex HMAC-SHA256 keyed with the secret string over `${t}.${rawBody}`. */
export function hmacHex(secret: string, t: string, rawBody: string): string {
  return createHmac('sha256', secret).update(`${t}.${rawBody}`).digest('hex');
}

/** Splits `t=<unix>,v1=<hex>[,v1=<hex>]` strictly: exactly one t, then v1 values in order. */
export function parseSignature(header: string | string[] | undefined): { t: string; v1: string[] } {
  if (typeof header !== 'string') throw new Error(`signature header missing or repeated: ${JSON.stringify(header)}`);
  const items = header.split(',').map((item) => {
    const match = /^(t|v1)=(.+)$/.exec(item);
    if (!match) throw new Error(`unexpected signature item ${JSON.stringify(item)} in ${header}`);
    return { key: match[1], value: match[2] };
  });
  if (items[0]?.key !== 't' || items.filter((i) => i.key === 't').length !== 1) throw new Error(`signature header must start with one t: ${header}`);
  return { t: items[0].value, v1: items.slice(1).map((i) => i.value) };
}

/** A TCP port on 127.0.0.1 nothing listens on (bound, then closed). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export const EVT_ID = /^evt_[0-9a-f]{32}$/;

export type RouteAnswer = Answer;
/** Per-path answers for a receiver: `(n)` is how many requests that path has had, this one included. */
export type Routes = Map<string, (n: number) => RouteAnswer>;

/** Makes the receiver answer each path by its route (200 "ok" for paths without one); returns the routes. */
export function routeResponses(receiver: TestReceiver): Routes {
  const routes: Routes = new Map();
  receiver.respond = (req) => {
    const route = routes.get(req.url);
    return route ? route(requestsTo(receiver, req.url).length) : { status: 200, body: 'ok' };
  };
  return routes;
}
