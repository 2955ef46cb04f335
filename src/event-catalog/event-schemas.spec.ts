import { EVENT_KINDS } from '../events/event-kinds';
import { buildEventData } from '../delivery/payloads';
import { fixtureData } from '../../test/fixtures/events';
import { newAjv, strict, validatedEnvelope } from '../../test/support/event-schemas';
import { exampleEnvelope } from './event-examples';
import { dataSchema, JsonSchema, PAYLOAD_MODES, payloadSchema } from './event-schemas';

const BASE = 'https://sync.example.com';
const KIND_MODES = EVENT_KINDS.flatMap((kind) => PAYLOAD_MODES.map((mode) => [kind, mode] as const));

/** What the delivery engine sends for the test fixtures' full data: the payload builder's data, attachment links added. */
function delivered(kind: (typeof EVENT_KINDS)[number], mode: 'concise' | 'verbose', channel: 'SMS' | 'EMAIL') {
  const data = buildEventData(kind, fixtureData(kind, { channel }), mode, 3) as { attachments?: Array<{ id: string }> };
  const withUrls = data.attachments
    ? { ...data, attachments: data.attachments.map((a) => ({ ...a, url: `${BASE}/attachments/${a.id}/download?for=x&expires=1&sig=ab` })) }
    : data;
  return {
    id: `evt_${'0a'.repeat(16)}`,
    type: kind,
    createdAt: '2025-06-02T09:43:00.500Z',
    endpointId: '5c9a1d37-8e42-4b6f-a1c0-7d3e9b2f5a64',
    mode,
    data: withUrls,
  };
}

describe('event catalog schemas', () => {
  it.each(KIND_MODES)('%s (%s): both documents compile under ajv strict mode, with stable $ids', (kind, mode) => {
    const ajv = newAjv();
    expect(() => ajv.compile(payloadSchema(kind, mode, BASE))).not.toThrow();
    expect(() => ajv.compile(dataSchema(kind, mode, BASE))).not.toThrow();
    expect(payloadSchema(kind, mode, BASE).$id).toBe(`${BASE}/events/schemas/${kind}/${mode}`);
    expect(dataSchema(kind, mode, BASE).$id).toBe(`${BASE}/events/schemas/${kind}/${mode}/data`);
  });

  it.each(KIND_MODES)('%s (%s): what the payload builder makes of full data validates strictly, on SMS and on EMAIL', (kind, mode) => {
    for (const channel of ['SMS', 'EMAIL'] as const) expect(() => validatedEnvelope(delivered(kind, mode, channel))).not.toThrow();
  });

  it.each(KIND_MODES)('%s (%s): the example validates against both documents, strictly', (kind, mode) => {
    const example = exampleEnvelope(kind, mode, BASE);
    expect(() => validatedEnvelope(example)).not.toThrow();
    const data = newAjv().compile(strict(dataSchema(kind, mode, BASE)) as JsonSchema);
    expect(data(example.data)).toBe(true);
  });

  it('verbose message data carries emailHeaders exactly when the message is an email', () => {
    const sms = delivered('message.received', 'verbose', 'SMS');
    expect(() => validatedEnvelope({ ...sms, data: { ...sms.data, emailHeaders: null } })).toThrow(/must NOT be valid/);
    const email = delivered('message.received', 'verbose', 'EMAIL') as { data: Record<string, unknown> };
    const { emailHeaders: _dropped, ...withoutHeaders } = email.data;
    expect(() => validatedEnvelope({ ...email, data: withoutHeaders })).toThrow(/must have required property 'emailHeaders'/);
  });

  it('published schemas tolerate an added field; the strict copy used in tests does not', () => {
    const example = exampleEnvelope('contact.merged', 'concise', BASE) as { data: object };
    const added = { ...example, data: { ...example.data, mergedAt: '2025-11-20T14:02:55.342Z' } };
    expect(newAjv().compile(payloadSchema('contact.merged', 'concise', BASE))(added)).toBe(true);
    expect(() => validatedEnvelope(added)).toThrow(/unevaluated properties \(mergedAt\)/);
  });
});
