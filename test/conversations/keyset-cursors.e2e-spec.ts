import { randomUUID } from 'node:crypto';
import { createMessagingTestApp, inboundSms, MessagingTestApp } from '../support/messaging-hooks';
import { toolError, toolOk } from '../support/mcp';
import { createSession, Session, uniquePhone } from '../support/session';

/**
 * Issue 10, §4: a cursor the service did not issue is a tool error naming `cursor`, never a
 * -32603 (a forged 2026-02-30 or year 0000 used to reach PostgreSQL) and never a silently
 * accepted position (an edited id used to page from wherever the caller liked).
 */
describe('list cursors: only the ones the service issued', () => {
  let m: MessagingTestApp;
  let s: Session;
  let endpointId: string;
  let threadId: string;
  /** A real nextCursor of each tool that pages here. */
  const real: Record<'list_threads' | 'list_contacts', string> = {} as never;

  const payloadOf = (cursor: string) => cursor.split('.')[0];
  const macOf = (cursor: string) => cursor.split('.')[1];
  /** A cursor made the way the service makes them, by someone without the key (MAC copied from a real one, if any). */
  const forge = (tool: string, key: string, id: string, from = real.list_threads) => {
    const payload = Buffer.from(JSON.stringify([tool, key, id])).toString('base64url');
    return macOf(from) === undefined ? payload : `${payload}.${macOf(from)}`;
  };
  /** A real cursor with its id changed and re-encoded, its MAC kept. */
  const withOtherId = (cursor: string) => {
    const [tool, key] = JSON.parse(Buffer.from(payloadOf(cursor), 'base64url').toString('utf8')) as string[];
    return forge(tool, key, randomUUID(), cursor);
  };

  beforeAll(async () => {
    m = await createMessagingTestApp();
    s = await createSession(m.admin, { lines: ['PHONE_NUMBER'] });
    const phone = s.lines[0];
    ({ threadId } = await inboundSms(m, phone.address, uniquePhone()));
    await inboundSms(m, phone.address, uniquePhone());
    for (const name of ['Ada', 'Grace'])
      await toolOk(m, s.apiKey, 'create_contact', { displayName: name, identities: [{ kind: 'PHONE', value: uniquePhone() }] });
    ({
      endpoint: { id: endpointId },
    } = await toolOk(m, s.apiKey, 'register_webhook', { url: `${m.receiverUrl}/cursors`, events: ['message.received'] }));
    real.list_threads = (await toolOk(m, s.apiKey, 'list_threads', { limit: 1 })).nextCursor;
    real.list_contacts = (await toolOk(m, s.apiKey, 'list_contacts', { limit: 1 })).nextCursor;
    expect(real.list_threads).toEqual(expect.any(String));
    expect(real.list_contacts).toEqual(expect.any(String));
  });
  afterAll(async () => {
    await m?.close();
  });

  it('pages on with the cursors it issued, as before', async () => {
    const first = await toolOk(m, s.apiKey, 'list_threads', { limit: 1 });
    const second = await toolOk(m, s.apiKey, 'list_threads', { limit: 1, cursor: first.nextCursor });
    expect(second.threads).toHaveLength(1);
    expect(second.threads[0].thread.id).not.toBe(first.threads[0].thread.id);
    expect(second.nextCursor).toBeNull();
    const contacts = await toolOk(m, s.apiKey, 'list_contacts', { limit: 1, cursor: real.list_contacts });
    expect(contacts.contacts.map((c: { displayName: string }) => c.displayName)).toEqual(['Grace']);
  });

  const TOOLS: Array<[string, () => Record<string, unknown>]> = [
    ['list_threads', () => ({})],
    ['get_thread', () => ({ threadId })],
    ['list_contacts', () => ({})],
    ['list_agent_turns', () => ({})],
    ['list_webhook_deliveries', () => ({ endpointId })],
  ];

  describe.each(TOOLS)('%s', (tool, args) => {
    it.each([
      ['an impossible date (2026-02-30)', () => forge(tool, '2026-02-30T00:00:00.000Z', randomUUID())],
      ['year 0000', () => forge(tool, '0000-01-01T00:00:00.000Z', randomUUID())],
      ['the same, unsigned (the old format)', () => payloadOf(forge(tool, '2026-02-30T00:00:00.000Z', randomUUID()))],
      ['a valid cursor of another tool', () => (tool === 'list_threads' ? real.list_contacts : real.list_threads)],
      ['a real cursor re-encoded with another id', () => withOtherId(tool === 'list_contacts' ? real.list_contacts : real.list_threads)],
      ['a real cursor cut short', () => real.list_threads.slice(0, -3)],
    ])('refuses %s as a tool error naming cursor', async (_, cursor) => {
      const message = await toolError(m, s.apiKey, tool, { ...args(), cursor: cursor() });
      expect(message).toBe(`cursor is not valid: pass the nextCursor of a previous ${tool} answer`);
    });
  });
});
