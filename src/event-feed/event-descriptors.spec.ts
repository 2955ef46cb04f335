import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { exampleEnvelope } from '../event-catalog/event-examples';
import { feedPayloadSchema, PAYLOAD_MODES } from '../event-catalog/event-schemas';
import { EVENT_KINDS } from '../events/event-kinds';
import { eventDescriptors, FILTERS_BY_KIND, inputSchemaOf } from './event-descriptors';

const DESCRIPTORS = eventDescriptors(feedPayloadSchema);

describe('the event descriptors (events/list)', () => {
  it('lists every kind, each with poll, push and webhook delivery, its filters and the payload shape options', () => {
    expect(DESCRIPTORS.map((e) => e.name)).toEqual([...EVENT_KINDS]);
    for (const descriptor of DESCRIPTORS) {
      expect(descriptor.delivery).toEqual(['poll', 'push', 'webhook']);
      const schema = descriptor.inputSchema as { properties: Record<string, unknown>; additionalProperties: boolean };
      expect(Object.keys(schema.properties)).toEqual([...FILTERS_BY_KIND[descriptor.name], 'mode', 'messageHistoryCount']);
      expect(schema.additionalProperties).toBe(false);
      expect(descriptor.description.length).toBeGreaterThan(10);
    }
  });

  it('applies each filter only where the data carry it', () => {
    expect(FILTERS_BY_KIND['message.received']).toEqual(['line', 'thread', 'direction', 'label']);
    expect(FILTERS_BY_KIND['agent_turn.sent']).toEqual(['line', 'thread', 'label']);
    expect(FILTERS_BY_KIND['email_account.health_changed']).toEqual(['line']);
    expect(FILTERS_BY_KIND['contact.merged']).toEqual([]);
    expect(Object.keys((inputSchemaOf(null) as { properties: object }).properties)).toEqual([
      'line',
      'thread',
      'direction',
      'label',
      'mode',
      'messageHistoryCount',
    ]);
  });

  it("advertises the catalog's payload: one envelope per mode, told apart by `mode`, without a webhook's endpointId", () => {
    const ajv = new Ajv2020({ allErrors: true, allowUnionTypes: true, strict: true, strictRequired: false });
    addFormats(ajv);
    for (const descriptor of DESCRIPTORS) {
      const validate = ajv.compile(descriptor.payloadSchema);
      for (const mode of PAYLOAD_MODES) {
        const { endpointId, ...envelope } = exampleEnvelope(descriptor.name, mode, 'https://sync.example.com');
        expect(endpointId).toBeDefined();
        const occurrenceData = { ...envelope, id: 'evt_4711' };
        expect(validate(occurrenceData)).toBe(true);
        expect(validate({ ...occurrenceData, mode: 'sideways' })).toBe(false);
        expect(validate({ ...occurrenceData, id: 'evt_0123456789abcdef0123456789abcdef' })).toBe(false);
        expect(validate({ ...occurrenceData, type: descriptor.name === 'contact.merged' ? 'message.received' : 'contact.merged' })).toBe(false);
      }
    }
    const schema = DESCRIPTORS[0].payloadSchema as { oneOf: Array<{ properties: Record<string, { const?: string }> }> };
    expect(schema.oneOf.map((branch) => branch.properties.mode.const)).toEqual(['concise', 'verbose']);
    expect(schema.oneOf.every((branch) => !('endpointId' in branch.properties))).toBe(true);
  });
});
