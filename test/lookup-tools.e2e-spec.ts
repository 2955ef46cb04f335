import { randomUUID } from 'node:crypto';
import { ISO_MS, toolError, toolOk, UUID } from './support/mcp';
import { createMessagingTestApp, inboundSms, MessagingTestApp, partnerPhone } from './support/messaging-hooks';
import { createSession, Session, SessionLine } from './support/session';

/** The look-ups an agent makes after a webhook wakes it (issue 16): each through real MCP calls, in an org of its own. */
describe('look-up tools', () => {
  let m: MessagingTestApp;
  beforeAll(async () => {
    m = await createMessagingTestApp();
  }, 60_000);
  afterAll(async () => {
    await m?.close();
  });

  const line = (s: Session, type: SessionLine['type']): SessionLine => s.lines.find((l) => l.type === type)!;

  /** A key of the session's user limited to these line addresses. */
  async function keyFor(s: Session, lines: string[]): Promise<string> {
    return (await m.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'scoped', channelAccess: { mode: 'LINES', lines } }).expect(201)).body.key;
  }

  describe('get_contact', () => {
    it('answers the contact with notes and identities; a key limited to other lines gets no identities; another org reads as not found', async () => {
      const s = await createSession(m.admin);
      const phone = line(s, 'PHONE_NUMBER');
      const email = line(s, 'EMAIL_ACCOUNT');
      const partner = partnerPhone();
      const { contact } = await toolOk(m, s.apiKey, 'create_contact', {
        displayName: 'Ada Lovelace',
        identities: [
          { kind: 'PHONE', value: partner },
          { kind: 'EMAIL', value: 'Ada@Example.org', displayName: 'Ada L.' },
        ],
      });
      await toolOk(m, s.apiKey, 'update_contact', { contactId: contact.id, notes: 'Prefers SMS after 6pm.' });
      // A conversation on the phone line: the contact is in view for keys that may use that line.
      await inboundSms(m, phone.address, partner, 'Is my order ready?');

      const got = (await toolOk(m, s.apiKey, 'get_contact', { contactId: contact.id })).contact;
      expect(got).toEqual({
        id: contact.id,
        displayName: 'Ada Lovelace',
        notes: 'Prefers SMS after 6pm.',
        createdAt: expect.stringMatching(ISO_MS),
        updatedAt: expect.stringMatching(ISO_MS),
        // Created in one transaction: in either order.
        identities: expect.arrayContaining([
          { id: expect.stringMatching(UUID), kind: 'PHONE', value: partner, displayName: null },
          { id: expect.stringMatching(UUID), kind: 'EMAIL', value: 'ada@example.org', displayName: 'Ada L.' },
        ]),
      });
      expect(got.identities).toHaveLength(2);
      // The same object list_contacts lists.
      expect((await toolOk(m, s.apiKey, 'list_contacts', { query: 'Lovelace' })).contacts).toEqual([got]);

      // A key limited to the email line: the contact's only conversation is on the phone line.
      const emailOnly = await keyFor(s, [email.address]);
      expect((await toolOk(m, emailOnly, 'get_contact', { contactId: contact.id })).contact).toEqual({ ...got, identities: [] });
      const phoneOnly = await keyFor(s, [phone.address]);
      expect((await toolOk(m, phoneOnly, 'get_contact', { contactId: contact.id })).contact).toEqual(got);

      // Another org's id reads exactly as an id that never existed.
      const other = await createSession(m.admin);
      const ghost = randomUUID();
      expect(await toolError(m, other.apiKey, 'get_contact', { contactId: contact.id })).toBe(`contact ${contact.id} not found`);
      expect(await toolError(m, s.apiKey, 'get_contact', { contactId: ghost })).toBe(`contact ${ghost} not found`);

      // A merged-away contact is gone too.
      const { contact: twin } = await toolOk(m, s.apiKey, 'create_contact', {
        displayName: 'Ada twin',
        identities: [{ kind: 'PHONE', value: partnerPhone() }],
      });
      await toolOk(m, s.apiKey, 'merge_contacts', { contactIds: [contact.id, twin.id], into: contact.id });
      expect(await toolError(m, s.apiKey, 'get_contact', { contactId: twin.id })).toBe(`contact ${twin.id} not found`);
    });

    it('refuses a missing, malformed or unknown argument, naming it', async () => {
      const s = await createSession(m.admin, { lines: ['PHONE_NUMBER'] });
      expect(await toolError(m, s.apiKey, 'get_contact', {})).toBe('invalid arguments: contactId is required');
      expect(await toolError(m, s.apiKey, 'get_contact', { contactId: 'ada' })).toBe('invalid arguments: contactId must match format "uuid"');
      expect(await toolError(m, s.apiKey, 'get_contact', { contactId: randomUUID(), notes: 'x' })).toBe('invalid arguments: notes is not a known argument');
    });
  });
});
