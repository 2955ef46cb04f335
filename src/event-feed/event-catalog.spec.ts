import { EVENT_KINDS } from '../events/event-kinds';
import { EVENT_CATALOG, FILTERS_BY_KIND, inputSchemaOf } from './event-catalog';

describe('the event catalog (events/list)', () => {
  it('lists the ten kinds, each with poll and push delivery, its filters and the payload shape options', () => {
    expect(EVENT_CATALOG.map((e) => e.name)).toEqual([...EVENT_KINDS]);
    for (const descriptor of EVENT_CATALOG) {
      expect(descriptor.delivery).toEqual(['poll', 'push']);
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
});
