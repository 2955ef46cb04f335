import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import request from 'supertest';
import { adminClient, TestApp } from '../support/app';
import { deliveryEnv, waitForRequests } from '../support/delivery';
import { toolOk } from '../support/mcp';
import { TestReceiver } from '../support/receiver';
import { ServiceProcess, startServiceProcess } from '../support/service-process';
import { createSession, Session, uniquePhone } from '../support/session';
import { INGEST_TOKEN } from '../support/test-env';
import { waitUntil } from '../support/wait';

jest.setTimeout(120_000);

interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  links: Array<{ traceId: string; spanId: string }>;
  status: { code?: number };
  resource: Record<string, unknown>;
}

/** OTLP's JSON attribute list → a plain object. */
function attributesOf(list: Array<{ key: string; value: Record<string, unknown> }> = []): Record<string, unknown> {
  return Object.fromEntries(
    list.map(({ key, value }) => {
      const raw = value.stringValue ?? value.intValue ?? value.boolValue ?? value.doubleValue;
      return [key, typeof raw === 'string' && 'intValue' in value ? Number(raw) : raw];
    }),
  );
}

/** Ids arrive as hex in OTLP/JSON (base64 from some encoders): always hex here. */
const hex = (id: string | undefined) => (!id ? '' : /^[0-9a-f]+$/i.test(id) ? id.toLowerCase() : Buffer.from(id, 'base64').toString('hex'));

/**
 * A real OTLP/HTTP receiver (JSON encoding): what an OpenTelemetry Collector's otlp receiver
 * accepts on :4318/v1/traces. It keeps every span it is sent.
 */
class OtlpReceiver {
  readonly spans: ExportedSpan[] = [];
  readonly paths: string[] = [];
  private server?: Server;

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        this.paths.push(`${req.method} ${req.url} ${req.headers['content-type']}`);
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { resourceSpans: any[] };
        for (const resourceSpans of body.resourceSpans ?? []) {
          const resource = attributesOf(resourceSpans.resource?.attributes);
          for (const scope of resourceSpans.scopeSpans ?? []) {
            for (const span of scope.spans ?? []) {
              this.spans.push({
                traceId: hex(span.traceId),
                spanId: hex(span.spanId),
                parentSpanId: hex(span.parentSpanId),
                name: span.name,
                kind: span.kind,
                attributes: attributesOf(span.attributes),
                links: (span.links ?? []).map((l: any) => ({ traceId: hex(l.traceId), spanId: hex(l.spanId) })),
                status: span.status ?? {},
                resource,
              });
            }
          }
        }
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{}');
      });
    });
    await new Promise<void>((done) => this.server!.listen(0, '127.0.0.1', done));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    await new Promise((done) => this.server?.close(done));
  }

  /** Waits for a span that `match` picks. */
  find(what: string, match: (span: ExportedSpan) => boolean): Promise<ExportedSpan> {
    return waitUntil(
      () => this.spans.find(match),
      () => `${what} among ${this.spans.length} spans: ${this.spans.map((s) => s.name).join(', ')}`,
      { timeoutMs: 15_000 },
    );
  }

  parentOf(span: ExportedSpan): ExportedSpan | undefined {
    return this.spans.find((s) => s.traceId === span.traceId && s.spanId === span.parentSpanId);
  }
}

/**
 * Issue 15, tracing: the service as it runs in production (`src/main.ts`, one `all` process)
 * with OTEL_EXPORTER_OTLP_ENDPOINT set sends OTLP spans to a real receiver, and one trace runs
 * from an inbound SMS (or a tool call) through the outbox relay to each delivery attempt, the
 * retry after a failure included.
 */
describe('OpenTelemetry traces', () => {
  const otlp = new OtlpReceiver();
  const hooks = new TestReceiver();
  let service: ServiceProcess | undefined;
  let base: string;
  let app: TestApp;
  let s: Session;
  let hooksBase: string;

  beforeAll(async () => {
    const otlpBase = await otlp.start();
    hooksBase = await hooks.start();
    service = await startServiceProcess(
      {
        ...(deliveryEnv(`tracing-${randomBytes(4).toString('hex')}`) as Record<string, string>),
        PROCESS_ROLE: 'all',
        LOG_LEVEL: 'warn',
        DELIVERY_RETRY_SCHEDULE: '300ms',
        OTEL_EXPORTER_OTLP_ENDPOINT: otlpBase,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_BSP_SCHEDULE_DELAY: '100',
      },
      '/ready',
    );
    base = service.base;
    const http = () => request(base);
    app = { http, admin: adminClient(http) } as unknown as TestApp;
    s = await createSession(app.admin, { tier: 'POWER', lines: ['PHONE_NUMBER'] });
  });

  afterAll(async () => {
    await service?.stop();
    await hooks.stop();
    await otlp.stop();
  });

  it('follows an inbound SMS from its request through the outbox relay to the attempt, and a retry joins the same trace', async () => {
    let calls = 0;
    hooks.respond = (req) => (req.url === '/traced' && ++calls === 1 ? { status: 500, body: 'not yet' } : { status: 200, body: 'ok' });
    const { endpoint } = await toolOk(app, s.apiKey, 'register_webhook', { url: `${hooksBase}/traced`, events: ['message.received'] });
    const callerTrace = `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01`;
    const res = await app
      .http()
      .post('/ingest/sms/inbound')
      .set('Authorization', `Bearer ${INGEST_TOKEN}`)
      .set('traceparent', callerTrace)
      .send({ to: s.lines[0].address, from: uniquePhone(), body: 'hello traces', providerMessageId: `trace-${randomUUID()}` });
    expect(res.status).toBe(201);
    await waitForRequests(hooks, '/traced', 2);

    const attempts = await waitUntil(
      () => {
        const found = otlp.spans.filter((span) => span.name === 'webhook attempt' && span.attributes['webhook.endpoint_id'] === endpoint.id);
        return found.length === 2 && found.sort((a, b) => Number(a.attributes['webhook.attempt']) - Number(b.attributes['webhook.attempt']));
      },
      () => `two attempt spans of ${endpoint.id} among: ${otlp.spans.map((x) => x.name).join(', ')}`,
      { timeoutMs: 15_000 },
    );
    const [first, retry] = attempts;
    expect(first.attributes).toMatchObject({
      'webhook.attempt': 1,
      'webhook.outcome': 'retrying',
      'http.response.status_code': 500,
      'event.type': 'message.received',
    });
    expect(first.status.code).toBe(2); // ERROR
    expect(retry.attributes).toMatchObject({ 'webhook.attempt': 2, 'webhook.outcome': 'succeeded', 'http.response.status_code': 200 });
    expect(retry.kind).toBe(3); // CLIENT

    // Both attempts are children of the relay's span for the event...
    const relay = otlp.parentOf(first)!;
    expect(relay).toMatchObject({ name: 'outbox relay', traceId: first.traceId });
    expect(relay.attributes['event.type']).toBe('message.received');
    expect(retry.parentSpanId).toBe(relay.spanId);
    expect(retry.traceId).toBe(first.traceId);
    // ...which is a child of the ingest span, itself a child of the request's server span.
    const ingest = otlp.parentOf(relay)!;
    expect(ingest).toMatchObject({ name: 'message ingest', attributes: expect.objectContaining({ 'message.channel': 'SMS', 'message.duplicate': false }) });
    expect(ingest.attributes['message.id']).toEqual(expect.any(String));
    const server = otlp.parentOf(ingest)!;
    expect(server).toMatchObject({ name: 'POST /ingest/sms/inbound', parentSpanId: '' });
    expect(server.attributes).toMatchObject({ 'http.route': '/ingest/sms/inbound', 'http.response.status_code': 201 });
    // The caller's traceparent is a link, not the parent: the trace is the service's own.
    expect(server.traceId).not.toBe(callerTrace.split('-')[1]);
    expect(server.links).toEqual([{ traceId: callerTrace.split('-')[1], spanId: callerTrace.split('-')[2] }]);
    expect(server.resource).toMatchObject({ 'service.name': 'messaging-sync', 'service.role': 'all' });
  });

  it('keeps concurrent SMS recorded in one shared transaction in traces of their own', async () => {
    const { endpoint } = await toolOk(app, s.apiKey, 'register_webhook', { url: `${hooksBase}/batched`, events: ['message.received'] });
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        app
          .http()
          .post('/ingest/sms/inbound')
          .set('Authorization', `Bearer ${INGEST_TOKEN}`)
          .send({ to: s.lines[0].address, from: uniquePhone(), body: `batched ${i}`, providerMessageId: `trace-batch-${randomUUID()}` }),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(201));
    await waitForRequests(hooks, '/batched', 8);
    const attempts = await waitUntil(
      () => {
        const found = otlp.spans.filter((span) => span.name === 'webhook attempt' && span.attributes['webhook.endpoint_id'] === endpoint.id);
        return found.length === 8 && found;
      },
      () => `eight attempt spans of ${endpoint.id}`,
      { timeoutMs: 15_000 },
    );
    // Each attempt leads back to the ingest span of its own message, in a trace of its own.
    const ingested = attempts.map((attempt) => otlp.parentOf(otlp.parentOf(attempt)!)!);
    expect(ingested.map((span) => span.name)).toEqual(Array(8).fill('message ingest'));
    expect(new Set(ingested.map((span) => span.attributes['message.id']))).toEqual(new Set(answers.map((a) => a.body.messageId)));
    expect(new Set(attempts.map((span) => span.traceId)).size).toBe(8);
  });

  it('follows a tool call through the outbox to the attempt, and a resend to its own attempt', async () => {
    const { endpoint } = await toolOk(app, s.apiKey, 'register_webhook', { url: `${hooksBase}/merged`, events: ['contact.merged'] });
    const a = await toolOk(app, s.apiKey, 'create_contact', { displayName: 'Ada', identities: [{ kind: 'PHONE', value: uniquePhone() }] });
    const b = await toolOk(app, s.apiKey, 'create_contact', { displayName: 'Ada L.', identities: [{ kind: 'PHONE', value: uniquePhone() }] });
    await toolOk(app, s.apiKey, 'merge_contacts', { contactIds: [a.contact.id, b.contact.id] });
    await waitForRequests(hooks, '/merged', 1);

    const attempt = await otlp.find(
      'the attempt span of contact.merged',
      (span) => span.name === 'webhook attempt' && span.attributes['webhook.endpoint_id'] === endpoint.id,
    );
    const relay = otlp.parentOf(attempt)!;
    expect(relay).toMatchObject({ name: 'outbox relay', attributes: expect.objectContaining({ 'event.type': 'contact.merged' }) });
    const tool = otlp.parentOf(relay)!;
    expect(tool).toMatchObject({ name: 'tools/call merge_contacts', kind: 2 }); // SERVER
    expect(tool.attributes).toMatchObject({ 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': 'merge_contacts', 'mcp.outcome': 'ok' });
    expect(otlp.parentOf(tool)).toMatchObject({ name: 'POST /api/mcp', parentSpanId: '' });

    const deliveryId = attempt.attributes['webhook.delivery_id'] as string;
    const copy = await toolOk(app, s.apiKey, 'resend_webhook_delivery', { deliveryId });
    await waitForRequests(hooks, '/merged', 2);
    const resent = await otlp.find(
      'the attempt span of the resend',
      (span) => span.name === 'webhook attempt' && span.attributes['webhook.delivery_id'] === copy.delivery.id,
    );
    expect(otlp.parentOf(resent)).toMatchObject({ name: 'tools/call resend_webhook_delivery' });
  });

  it.each(['2026-07-28', '2025-11-25'])(
    'a traceparent in params._meta (%s) continues the caller’s trace: the tool call and what it causes are in it, the HTTP span linked, sampling the service’s',
    async (version) => {
      const traceId = randomBytes(16).toString('hex');
      const callerSpan = randomBytes(8).toString('hex');
      const { endpoint } = await toolOk(app, s.apiKey, 'register_webhook', { url: `${hooksBase}/traced-${version}`, events: ['contact.merged'] });
      const a = await toolOk(app, s.apiKey, 'create_contact', { displayName: 'Grace', identities: [{ kind: 'PHONE', value: uniquePhone() }] });
      const b = await toolOk(app, s.apiKey, 'create_contact', { displayName: 'Grace H.', identities: [{ kind: 'PHONE', value: uniquePhone() }] });
      const modern = version === '2026-07-28';
      // The legacy case's caller did not sample its span (flags 00): the service samples by its own decision all the same.
      const meta: Record<string, unknown> = { traceparent: `00-${traceId}-${callerSpan}-${modern ? '01' : '00'}`, tracestate: 'vendor=agent' };
      if (modern) Object.assign(meta, { 'io.modelcontextprotocol/protocolVersion': version, 'io.modelcontextprotocol/clientCapabilities': {} });
      let call = request(base)
        .post('/api/mcp')
        .set('Authorization', `Bearer ${s.apiKey}`)
        .set('Accept', 'application/json, text/event-stream')
        .set('MCP-Protocol-Version', version);
      if (modern) call = call.set('Mcp-Method', 'tools/call').set('Mcp-Name', 'merge_contacts');
      const res = await call.send({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'merge_contacts', arguments: { contactIds: [a.contact.id, b.contact.id] }, _meta: meta },
      });
      expect(res.status).toBe(200);
      expect(res.body.result.isError).toBeUndefined();
      await waitForRequests(hooks, `/traced-${version}`, 1);

      const attempt = await otlp.find(
        'the attempt span of the traced merge',
        (span) => span.name === 'webhook attempt' && span.attributes['webhook.endpoint_id'] === endpoint.id,
      );
      expect(attempt.traceId).toBe(traceId);
      const tool = otlp.parentOf(otlp.parentOf(attempt)!)!;
      expect(tool).toMatchObject({ name: 'tools/call merge_contacts', traceId, parentSpanId: callerSpan });
      const [link] = tool.links;
      const server = otlp.spans.find((span) => span.spanId === link.spanId)!;
      expect(server).toMatchObject({ name: 'POST /api/mcp', parentSpanId: '' });
      expect(server.traceId).not.toBe(traceId);
    },
  );

  it('names server spans by route pattern, so a token in a path never reaches a trace', async () => {
    const token = randomBytes(18).toString('base64url');
    expect((await fetch(`${base}/t/o/${token}`)).status).toBe(200);
    const scan = `/not-a-route-${randomBytes(6).toString('hex')}`;
    expect((await fetch(`${base}${scan}`)).status).toBe(404);
    await otlp.find('the pixel request span', (span) => span.name === 'GET /t/o/:token');
    await otlp.find('the unmatched request span', (span) => span.name === 'GET other' && span.attributes['http.response.status_code'] === 404);
    const exported = JSON.stringify(otlp.spans);
    expect(exported).not.toContain(token);
    expect(exported).not.toContain(scan);
    expect(otlp.paths.every((line) => line.startsWith('POST /v1/traces application/json'))).toBe(true);
  });
});
