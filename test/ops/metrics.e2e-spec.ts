import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { OutboxRelay } from '../../src/events/outbox-relay';
import { MetricsServer } from '../../src/ops/metrics/metrics-server';
import { ServiceQueues } from '../../src/queue/queue.module';
import { fixtureEvent } from '../fixtures/events';
import {
  closeDeliveryTestApp,
  createDeliveryTestApp,
  DeliveryTestApp,
  freePort,
  publish,
  register,
  waitDeliveryIdle,
  waitForRequests,
} from '../support/delivery';
import { rpc } from '../support/mcp';
import { sample } from '../support/metrics';
import { TestReceiver } from '../support/receiver';
import { createSession, Session, uniquePhone } from '../support/session';
import { INGEST_TOKEN } from '../support/test-env';
import { waitUntil } from '../support/wait';

const METRICS_TOKEN = 'test-metrics-token-0123456789';
const AUTH = { Authorization: `Bearer ${METRICS_TOKEN}` };
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;

/**
 * GET /metrics as Prometheus scrapes it: behind METRICS_TOKEN, on the api's port and on
 * METRICS_PORT, with the counters of what the app just did (an inbound SMS, its delivery, tool
 * calls, HTTP requests), the gauges read at scrape time, and label values that carry no ids.
 */
describe('Prometheus metrics', () => {
  let t: DeliveryTestApp;
  let s: Session;
  let metricsPort: number;
  const receiver = new TestReceiver();
  let base: string;

  beforeAll(async () => {
    base = await receiver.start();
    metricsPort = await freePort();
    t = await createDeliveryTestApp({ queueTag: 'metrics', env: { METRICS_TOKEN, METRICS_PORT: String(metricsPort) } });
    s = await createSession(t.admin, { tier: 'POWER', lines: ['PHONE_NUMBER'] });
  });
  afterAll(async () => {
    await closeDeliveryTestApp(t);
    await receiver.stop();
  });

  async function scrape(): Promise<string> {
    const res = await t.http().get('/metrics').set(AUTH);
    expect(res.status).toBe(200);
    return res.text;
  }

  const inbound = (body: object) => t.http().post('/ingest/sms/inbound').set('Authorization', `Bearer ${INGEST_TOKEN}`).send(body);

  it('answers 401 with a Bearer challenge without the token or with a wrong one, and the text format with it', async () => {
    const none = await t.http().get('/metrics');
    expect(none.status).toBe(401);
    expect(none.headers['www-authenticate']).toBe('Bearer realm="messaging-sync"');
    expect(none.body).toEqual({ statusCode: 401, error: 'Unauthorized', message: 'a valid metrics token is required: Authorization: Bearer <METRICS_TOKEN>' });
    const wrong = await t.http().get('/metrics').set('Authorization', 'Bearer not-the-metrics-token');
    expect(wrong.status).toBe(401);
    expect(wrong.text).not.toContain(METRICS_TOKEN);

    const res = await t.http().get('/metrics').set(AUTH);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-store');
    for (const name of [
      'webhook_deliveries_total',
      'webhook_delivery_attempt_duration_seconds',
      'webhook_delivery_lag_seconds',
      'webhook_endpoints',
      'outbox_pending_events',
      'outbox_relay_lag_seconds',
      'queue_jobs',
      'delivery_log_days_ahead',
      'delivery_log_days_dropped_total',
      'delivery_log_days_kept_total',
      'mcp_requests_total',
      'mcp_request_duration_seconds',
      'ingest_messages_total',
      'attachment_extractions_total',
      'http_request_duration_seconds',
      'process_cpu_user_seconds_total',
      'nodejs_eventloop_lag_p99_seconds',
      'process_resident_memory_bytes',
    ]) {
      expect(res.text).toContain(`# TYPE ${name} `);
    }
  });

  it('counts an inbound SMS, its repeat and a refused one, and the delivery of its event with its duration and lag', async () => {
    const { endpoint } = await register(t, s.apiKey, { url: `${base}/metrics-hook`, events: ['message.received'] });
    const before = await scrape();
    const providerMessageId = `metrics-${randomUUID()}`;
    const sms = { to: s.lines[0].address, from: uniquePhone(), body: 'hello metrics', providerMessageId };
    expect((await inbound(sms)).status).toBe(201);
    expect((await inbound(sms)).status).toBe(200);
    expect((await inbound({ ...sms, to: uniquePhone(), providerMessageId: `metrics-${randomUUID()}` })).status).toBe(404);
    const withFile = {
      ...sms,
      providerMessageId: `metrics-${randomUUID()}`,
      media: [{ filename: 'note.txt', mimeType: 'text/plain', contentBase64: Buffer.from('table for two at eight').toString('base64') }],
    };
    expect((await inbound(withFile)).status).toBe(201);
    await waitForRequests(receiver, '/metrics-hook', 2);
    await waitDeliveryIdle(t);
    await waitUntil(
      async () =>
        sample(await scrape(), 'attachment_extractions_total', { outcome: 'extracted' }) ===
        (sample(before, 'attachment_extractions_total', { outcome: 'extracted' }) ?? 0) + 1,
      'the extraction to be counted',
    );

    const after = await scrape();
    const delta = (name: string, labels: Record<string, string> = {}) => (sample(after, name, labels) ?? 0) - (sample(before, name, labels) ?? 0);
    expect(delta('ingest_messages_total', { channel: 'SMS', outcome: 'recorded' })).toBe(2);
    expect(delta('ingest_messages_total', { channel: 'SMS', outcome: 'duplicate' })).toBe(1);
    expect(delta('ingest_messages_total', { channel: 'SMS', outcome: 'rejected' })).toBe(1);
    expect(delta('webhook_deliveries_total', { outcome: 'succeeded' })).toBe(2);
    expect(delta('webhook_delivery_attempt_duration_seconds_count')).toBe(2);
    expect(delta('webhook_delivery_lag_seconds_count')).toBe(2);
    const lag = delta('webhook_delivery_lag_seconds_sum');
    expect(lag).toBeGreaterThan(0);
    expect(lag).toBeLessThan(10);

    const [row] = await t.db.query(`SELECT count(*)::int AS n FROM webhook_endpoints WHERE status = 'active'`);
    expect(sample(after, 'webhook_endpoints', { status: 'active' })).toBe(row.n);
    expect(sample(after, 'webhook_endpoints', { status: 'disabled' })).toEqual(expect.any(Number));
    expect(endpoint.id).toMatch(UUID);
  });

  it('labels tool calls by method, known tool name and outcome, never by a name the caller made up', async () => {
    const before = await scrape();
    expect((await rpc(t, s.apiKey, 'tools/call', { name: 'list_threads', arguments: {} })).status).toBe(200);
    expect((await rpc(t, s.apiKey, 'tools/call', { name: 'list_threads', arguments: { limit: 'many' } })).body.result.isError).toBe(true);
    const made = `tool_${randomUUID()}`;
    expect((await rpc(t, s.apiKey, 'tools/call', { name: made, arguments: {} })).body.error.code).toBe(-32602);
    expect((await rpc(t, s.apiKey, `made/${randomUUID()}`)).body.error.code).toBe(-32601);
    expect((await rpc(t, s.apiKey, 'tools/list')).status).toBe(200);

    const after = await scrape();
    const delta = (name: string, labels: Record<string, string>) => (sample(after, name, labels) ?? 0) - (sample(before, name, labels) ?? 0);
    expect(delta('mcp_requests_total', { method: 'tools/call', tool: 'list_threads', outcome: 'ok' })).toBe(1);
    expect(delta('mcp_requests_total', { method: 'tools/call', tool: 'list_threads', outcome: 'tool_error' })).toBe(1);
    expect(delta('mcp_requests_total', { method: 'tools/call', tool: 'unknown', outcome: 'rpc_error' })).toBe(1);
    expect(delta('mcp_requests_total', { method: 'other', tool: '-', outcome: 'rpc_error' })).toBe(1);
    expect(delta('mcp_requests_total', { method: 'tools/list', tool: '-', outcome: 'ok' })).toBe(1);
    expect(delta('mcp_request_duration_seconds_count', { tool: 'list_threads' })).toBe(2);
    expect(after).not.toContain(made);
  });

  it('labels HTTP requests by route pattern and status: ids and unknown paths never become label values', async () => {
    const unknown = `/no-such-page-${randomUUID()}`;
    expect((await t.http().get(unknown)).status).toBe(404);
    expect((await t.admin.get(`/admin/orgs/${s.orgId}`)).status).toBe(200);
    expect((await inbound({ to: uniquePhone(), from: uniquePhone(), body: 'to nobody', providerMessageId: `metrics-${randomUUID()}` })).status).toBe(404);
    const text = await scrape();
    expect(sample(text, 'http_request_duration_seconds_count', { route: '/admin/orgs/:orgId', status: '200' })).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'http_request_duration_seconds_count', { route: '/ingest/sms/inbound', status: '404' })).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'http_request_duration_seconds_count', { route: 'other', status: '404' })).toBeGreaterThanOrEqual(1);
    expect(text).not.toMatch(UUID);
  });

  it('reads the outbox and every queue at scrape time', async () => {
    const relay = t.app.get(OutboxRelay);
    await relay.stop(); // events now wait, as with every worker down
    try {
      await publish(t, fixtureEvent('contact.merged', { orgId: s.orgId, lineId: null }));
      await new Promise((r) => setTimeout(r, 1100));
      const text = await scrape();
      const [row] = await t.db.query(`SELECT count(*)::int AS n FROM outbox_events WHERE relayed_at IS NULL`);
      expect(row.n).toBeGreaterThanOrEqual(1);
      expect(sample(text, 'outbox_pending_events')).toBe(row.n);
      expect(sample(text, 'outbox_relay_lag_seconds')).toBeGreaterThanOrEqual(1);
    } finally {
      relay.start();
    }
    await waitUntilRelayed();
    const text = await scrape();
    expect(sample(text, 'outbox_pending_events')).toBe(0);
    expect(sample(text, 'outbox_relay_lag_seconds')).toBe(0);
    // Days are made DELIVERY_LOG_PARTITIONS_AHEAD_DAYS (7) ahead at start: the last one ends 7 to 8 days from now.
    expect(sample(text, 'delivery_log_days_ahead')).toBeGreaterThan(7);
    expect(sample(text, 'delivery_log_days_ahead')).toBeLessThanOrEqual(8);

    const queues = t.app.get(ServiceQueues).all();
    expect(queues.length).toBeGreaterThanOrEqual(3);
    for (const queue of queues) {
      for (const state of ['waiting', 'active', 'completed', 'failed', 'delayed', 'paused']) {
        expect(sample(text, 'queue_jobs', { queue: queue.name, state })).toEqual(expect.any(Number));
      }
    }
  });

  it('the Grafana dashboard in deploy/ queries only metrics the service exports', async () => {
    const dashboard = JSON.parse(readFileSync(resolve(__dirname, '../../deploy/grafana/dashboards/messaging-sync.json'), 'utf8')) as {
      panels: Array<{ title: string; targets: Array<{ expr: string }> }>;
    };
    const exported = new Set(
      [...(await scrape()).matchAll(/^# TYPE (\S+) (\S+)$/gm)].flatMap(([, name, type]) =>
        type === 'histogram' ? [`${name}_bucket`, `${name}_count`, `${name}_sum`] : [name],
      ),
    );
    const functions = new Set(['sum', 'by', 'rate', 'increase', 'max', 'histogram_quantile', 'le']);
    const queried = dashboard.panels.flatMap((panel) =>
      panel.targets.flatMap((target) => [...target.expr.replace(/\{[^}]*\}|"[^"]*"|\[[^\]]*\]/g, '').matchAll(/[a-z_][a-z0-9_]*/g)].map((m) => m[0])),
    );
    const metrics = queried.filter((word) => !functions.has(word) && !['outcome', 'queue', 'state', 'status', 'tool', 'channel', 'route'].includes(word));
    expect(metrics.length).toBeGreaterThan(15);
    expect(metrics.filter((name) => !exported.has(name))).toEqual([]);
    for (const name of ['webhook_deliveries_total', 'webhook_delivery_lag_seconds_bucket', 'outbox_pending_events', 'queue_jobs', 'mcp_requests_total']) {
      expect(metrics).toContain(name);
    }
  });

  async function waitUntilRelayed(): Promise<void> {
    for (let i = 0; i < 100; i += 1) {
      const [row] = await t.db.query(`SELECT count(*)::int AS n FROM outbox_events WHERE relayed_at IS NULL`);
      if (row.n === 0) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error('the outbox did not drain');
  }

  it('serves the same exposition on METRICS_PORT, behind the same token, and nothing else there', async () => {
    expect(t.app.get(MetricsServer).port).toBe(metricsPort);
    const url = `http://127.0.0.1:${metricsPort}`;
    const none = await fetch(`${url}/metrics`);
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer realm="messaging-sync"');
    const ok = await fetch(`${url}/metrics`, { headers: AUTH });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(await ok.text()).toContain('# TYPE webhook_deliveries_total counter');
    const other = await fetch(`${url}/v1/threads`, { headers: AUTH });
    expect(other.status).toBe(404);
    expect(await other.json()).toEqual({
      statusCode: 404,
      error: 'Not Found',
      message: 'only GET /metrics, GET /health, GET /ready are served on METRICS_PORT',
    });
  });
});
