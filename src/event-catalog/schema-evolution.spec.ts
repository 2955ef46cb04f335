import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Catalog, currentCatalog, nonAdditiveChanges } from './schema-evolution';
import { JsonSchema } from './event-schemas';

const SNAPSHOT = join(__dirname, 'schemas.snapshot.json');

type Def = { properties: Record<string, JsonSchema>; required: string[]; description?: string };
type Editable = Record<string, { $defs: Record<string, Def> }>;

/** A deep copy of the current catalog changed by `edit`. */
function changed(edit: (catalog: Editable) => void): Catalog {
  const copy = JSON.parse(JSON.stringify(currentCatalog())) as Editable;
  edit(copy);
  return copy;
}

describe('the catalog evolves additively', () => {
  it('the current schemas make no non-additive change to the committed snapshot (src/event-catalog/schemas.snapshot.json)', () => {
    const snapshot = JSON.parse(readFileSync(SNAPSHOT, 'utf8')) as Catalog;
    expect(nonAdditiveChanges(snapshot, currentCatalog())).toEqual([]);
  });

  it('the snapshot is the current catalog (after an additive change, npm run docs:events -- --snapshot records it)', () => {
    expect(JSON.parse(readFileSync(SNAPSHOT, 'utf8'))).toEqual(currentCatalog());
  });

  const optional = (schema: Def) => (schema.properties.priority = { type: 'string' });
  it.each<[string, (c: Editable) => void]>([
    ['a new optional field', (c) => optional(c['message.received.concise'].$defs.message)],
    ['a new event kind', (c) => (c['message.deleted.concise'] = c['message.received.concise'])],
    ['a new description', (c) => (c['contact.merged.concise'].$defs.contact.description = 'Reworded.')],
  ])('allows %s', (_what, edit) => {
    expect(nonAdditiveChanges(currentCatalog(), changed(edit))).toEqual([]);
  });

  it.each<[string, (c: Editable) => void, string]>([
    [
      'a removed field',
      (c) => delete c['message.received.concise'].$defs.message.properties.sentAt,
      'message.received.concise.data.message.sentAt: removed or renamed',
    ],
    [
      'a renamed field',
      (c) => {
        const contact = c['contact.merged.verbose'].$defs.contact;
        contact.properties.name = contact.properties.displayName;
        delete contact.properties.displayName;
        contact.required = ['id', 'name', 'identities'];
      },
      'contact.merged.verbose.data.contact.displayName: removed or renamed',
    ],
    [
      'a retyped field',
      (c) => (c['email.opened.verbose'].$defs.open.properties.openCount.type = 'string'),
      'email.opened.verbose.data.open.openCount: type changed from integer to string',
    ],
    [
      'null allowed where it was not',
      (c) => (c['agent_turn.sent.concise'].$defs.agentTurn.properties.status.type = ['string', 'null']),
      'type changed from string to null or string',
    ],
    [
      'a field newly required',
      (c) => {
        const data = c['message.received.verbose'].$defs.data;
        data.properties.priority = { type: 'string' };
        data.required = [...data.required, 'priority'];
      },
      'message.received.verbose.data.priority: newly required',
    ],
    ['a removed kind', (c) => delete c['thread.created.verbose'], 'thread.created.verbose: removed'],
    ['a tightened limit', (c) => (c['message.sent.concise'].$defs.message.properties.body.maxLength = 8000), 'body: maxLength changed from 16384 to 8000'],
    ['an enum value removed', (c) => (c['message.sent.concise'].$defs.message.properties.channel.enum = ['SMS']), 'channel: enum changed'],
  ])('refuses %s', (_what, edit, problem) => {
    expect(nonAdditiveChanges(currentCatalog(), changed(edit)).join('\n')).toContain(problem);
  });
});
