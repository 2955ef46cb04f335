import { request } from 'node:http';
import { exampleEnvelope } from '../../src/event-catalog/event-examples';
import { TestReceiver } from '../support/receiver';

/** The guard every delivery test goes through: TestReceiver validates each webhook body against the catalog on arrival. */

function post(base: string, body: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}/hook`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const deliver = (base: string, envelope: object) =>
  post(base, JSON.stringify(envelope), { 'x-service-event-type': String((envelope as { type: string }).type) });

describe('TestReceiver checks every webhook body against the event catalog', () => {
  let receiver: TestReceiver;
  let base: string;
  beforeEach(async () => {
    receiver = new TestReceiver();
    base = await receiver.start();
  });
  afterEach(async () => {
    receiver.schemaErrors.splice(0);
    await receiver.stop();
  });

  it('lets a body that matches its schema through', async () => {
    await deliver(base, exampleEnvelope('message.received', 'verbose', 'https://sync.example.com'));
    await receiver.waitFor(1);
    expect(receiver.requests).toHaveLength(1);
  });

  const drifts: Array<[string, (e: any) => void, RegExp]> = [
    ['an undocumented field', (e) => (e.data.message.priority = 'high'), /\/data\/message must NOT have unevaluated properties \(priority\)/],
    ['a field gone', (e) => delete e.data.thread.messageCount, /\/data\/thread must have required property 'messageCount'/],
    ['a field retyped', (e) => (e.data.message.bodyTruncated = 'no'), /\/data\/message\/bodyTruncated must be boolean/],
    ['a verbose-only field in concise', (e) => (e.data.labelConfidence = {}), /unevaluated properties \(labelConfidence\)/],
    ['a body over its limit', (e) => (e.data.message.body = 'x'.repeat(16_385)), /\/data\/message\/body must NOT have more than 16384 characters/],
    ['an envelope id of the wrong form', (e) => (e.id = 'evt_123'), /\/id must match pattern/],
  ];
  it.each(drifts)('fails the test on %s: reading the requests and stopping the receiver throw', async (_what, drift, message) => {
    const envelope = exampleEnvelope('message.received', 'concise', 'https://sync.example.com');
    drift(envelope);
    await deliver(base, envelope);
    await expect(receiver.waitFor(1)).rejects.toThrow(message);
    expect(() => receiver.requests).toThrow(message);
    await expect(receiver.stop()).rejects.toThrow(/drift from the event catalog/);
    base = await receiver.start();
  });

  it('refuses a delivery whose type has no schema', async () => {
    await deliver(base, { ...exampleEnvelope('contact.merged', 'concise', 'https://sync.example.com'), type: 'contact.deleted' });
    await expect(receiver.waitFor(1)).rejects.toThrow(/no catalog schema: type "contact.deleted"/);
  });

  it('leaves requests that are not webhook deliveries alone (no X-Service-Event-Type)', async () => {
    await post(base, '{"not":"an event"}', {});
    await receiver.waitFor(1);
    expect(receiver.requests[0].body).toBe('{"not":"an event"}');
  });
});
