import { randomUUID } from 'node:crypto';
import { ISO_MS, toolError, toolOk, UUID } from '../support/mcp';
import { createMessagingTestApp, inboundSms, MessagingTestApp, partnerPhone } from '../support/messaging-hooks';
import { createSession, Session, SessionLine } from '../support/session';
import { waitUntil } from '../support/wait';
import { LABELS_PAGE_SIZE } from '../../src/conversations/threads/threads.service';
import { AGENTS_PAGE_SIZE } from '../../src/agents/agent.types';

type Json = Record<string, any>;

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

  describe('list_labels', () => {
    it("lists the labels on the key's lines and those on no thread; a label only on other lines, or of another org, is not listed", async () => {
      const s = await createSession(m.admin, { lines: ['PHONE_NUMBER', 'PHONE_NUMBER'] });
      const [front, back] = s.lines;
      const frontThread = (await inboundSms(m, front.address, partnerPhone(), 'Where is my refund?')).threadId;
      const backThread = (await inboundSms(m, back.address, partnerPhone(), 'Board meeting moved')).threadId;
      await toolOk(m, s.apiKey, 'label_thread', { threadId: frontThread, add: [{ name: 'billing' }, { name: 'urgent' }] });
      await toolOk(m, s.apiKey, 'label_thread', { threadId: backThread, add: [{ name: 'acquisition' }, { name: 'urgent' }] });
      // Put on a thread and taken off again: the org has it, no thread carries it.
      await toolOk(m, s.apiKey, 'label_thread', { threadId: frontThread, add: [{ name: 'spam?' }] });
      await toolOk(m, s.apiKey, 'label_thread', { threadId: frontThread, remove: ['spam?'] });

      const all = await toolOk(m, s.apiKey, 'list_labels', {});
      expect(all).toEqual({
        labels: ['acquisition', 'billing', 'spam?', 'urgent'].map((name) => ({ id: expect.stringMatching(UUID), name })),
        nextCursor: null,
      });
      const frontOnly = await keyFor(s, [front.address]);
      expect((await toolOk(m, frontOnly, 'list_labels', {})).labels).toEqual(all.labels.filter((l: { name: string }) => l.name !== 'acquisition'));
      // The threads a label's name finds, with list_threads, are the key's own.
      expect((await toolOk(m, frontOnly, 'list_threads', { label: 'urgent' })).threads.map((x: { thread: { id: string } }) => x.thread.id)).toEqual([
        frontThread,
      ]);

      const other = await createSession(m.admin, { lines: ['PHONE_NUMBER'] });
      expect(await toolOk(m, other.apiKey, 'list_labels', {})).toEqual({ labels: [], nextCursor: null });
    });

    it(`pages ${LABELS_PAGE_SIZE} labels at a time by name, with an opaque cursor; refuses a cursor it did not issue and unknown arguments`, async () => {
      const s = await createSession(m.admin, { lines: ['PHONE_NUMBER'] });
      const threadId = (await inboundSms(m, s.lines[0].address, partnerPhone())).threadId;
      const names = Array.from({ length: LABELS_PAGE_SIZE + 5 }, (_, i) => `topic-${String(i).padStart(3, '0')}`);
      for (let i = 0; i < names.length; i += 50) {
        await toolOk(m, s.apiKey, 'label_thread', { threadId, add: names.slice(i, i + 50).map((name) => ({ name })) });
      }
      const first = await toolOk(m, s.apiKey, 'list_labels', {});
      expect(first.labels).toHaveLength(LABELS_PAGE_SIZE);
      expect(first.nextCursor).toEqual(expect.any(String));
      const second = await toolOk(m, s.apiKey, 'list_labels', { cursor: first.nextCursor });
      expect(second.nextCursor).toBeNull();
      expect([...first.labels, ...second.labels].map((l: { name: string }) => l.name)).toEqual(names);

      expect(await toolError(m, s.apiKey, 'list_labels', { cursor: 'garbage' })).toBe(
        'cursor is not valid: pass the nextCursor of a previous list_labels answer',
      );
      expect(await toolError(m, s.apiKey, 'list_labels', { limit: 5 })).toBe('invalid arguments: limit is not a known argument');
    });
  });

  /** An agent made by the operator (POST /admin/lines/:lineId/agents). */
  async function agentOn(lineId: string, name: string, mode: 'DRAFT' | 'AUTO' | 'SUPERVISED'): Promise<Json> {
    return (await m.admin.post(`/admin/lines/${lineId}/agents`, { name, mode }).expect(201)).body;
  }

  describe('list_agents', () => {
    it("lists the agents on the key's lines by name; other lines, deleted lines and other orgs show none", async () => {
      const s = await createSession(m.admin, { lines: ['PHONE_NUMBER', 'EMAIL_ACCOUNT'] });
      const phone = line(s, 'PHONE_NUMBER');
      const email = line(s, 'EMAIL_ACCOUNT');
      const frontDesk = await agentOn(phone.id, 'Front desk', 'DRAFT');
      const inbox = await agentOn(email.id, 'Inbox bot', 'AUTO');
      const gone = (await m.admin.post(`/admin/orgs/${s.orgId}/lines`, { type: 'PHONE_NUMBER', address: partnerPhone() }).expect(201)).body;
      await m.admin.put(`/admin/lines/${gone.id}/members/${s.userId}`).expect(200);
      await agentOn(gone.id, 'Archived bot', 'SUPERVISED');
      await m.admin.delete(`/admin/lines/${gone.id}`).expect(204);

      const all = await toolOk(m, s.apiKey, 'list_agents', {});
      expect(all).toEqual({
        agents: [
          { id: frontDesk.id, lineId: phone.id, name: 'Front desk', mode: 'DRAFT', createdAt: expect.stringMatching(ISO_MS) },
          { id: inbox.id, lineId: email.id, name: 'Inbox bot', mode: 'AUTO', createdAt: expect.stringMatching(ISO_MS) },
        ],
        nextCursor: null,
      });
      expect(all.agents).toEqual([frontDesk, inbox]);

      // A key limited to the phone line; a MEMBER of the org on no line; another org.
      expect((await toolOk(m, await keyFor(s, [phone.address]), 'list_agents', {})).agents).toEqual([frontDesk]);
      const member = await createSession(m.admin, { orgId: s.orgId, role: 'MEMBER', lines: [] });
      expect(await toolOk(m, member.apiKey, 'list_agents', {})).toEqual({ agents: [], nextCursor: null });
      await m.admin.put(`/admin/lines/${email.id}/members/${member.userId}`).expect(200);
      expect((await toolOk(m, member.apiKey, 'list_agents', {})).agents).toEqual([inbox]);
      const other = await createSession(m.admin);
      expect(await toolOk(m, other.apiKey, 'list_agents', {})).toEqual({ agents: [], nextCursor: null });
    });

    it(`pages ${AGENTS_PAGE_SIZE} agents at a time, with an opaque cursor; refuses a cursor it did not issue`, async () => {
      const s = await createSession(m.admin, { lines: ['PHONE_NUMBER'] });
      const names = Array.from({ length: AGENTS_PAGE_SIZE + 1 }, (_, i) => `Agent ${String(i).padStart(2, '0')}`);
      for (const name of names) await agentOn(s.lines[0].id, name, 'DRAFT');
      const first = await toolOk(m, s.apiKey, 'list_agents', {});
      expect(first.agents).toHaveLength(AGENTS_PAGE_SIZE);
      const second = await toolOk(m, s.apiKey, 'list_agents', { cursor: first.nextCursor });
      expect(second).toEqual({ agents: [expect.objectContaining({ name: names[AGENTS_PAGE_SIZE] })], nextCursor: null });
      expect([...first.agents, ...second.agents].map((a: Json) => a.name)).toEqual(names);
      expect(await toolError(m, s.apiKey, 'list_agents', { cursor: 'garbage' })).toBe(
        'cursor is not valid: pass the nextCursor of a previous list_agents answer',
      );
    });
  });

  /** A turn proposed through the REST route (POST /api/agents/:agentId/turns). */
  async function postTurn(key: string, agentId: string, body: Json): Promise<Json> {
    return (await m.http().post(`/api/agents/${agentId}/turns`).set('Authorization', `Bearer ${key}`).send(body).expect(201)).body.turn;
  }

  /** The event types published (outbox) for a turn, in order. */
  async function turnEvents(turnId: string): Promise<string[]> {
    const rows: Array<{ type: string }> = await m.db.query(`SELECT type FROM outbox_events WHERE data->'agentTurn'->>'id' = $1 ORDER BY id`, [turnId]);
    return rows.map((r) => r.type);
  }

  describe('create_agent_turn', () => {
    it('DRAFT: the turn waits and nothing is sent; AUTO: the reply goes to the carrier; the same turn the REST route makes', async () => {
      const s = await createSession(m.admin, { lines: ['PHONE_NUMBER'] });
      const phone = s.lines[0];
      const partner = partnerPhone();
      const { threadId } = await inboundSms(m, phone.address, partner, 'Do you open on Sunday?');
      const drafter = await agentOn(phone.id, 'Drafter', 'DRAFT');
      const sender = await agentOn(phone.id, 'Sender', 'AUTO');

      const draft = (await toolOk(m, s.apiKey, 'create_agent_turn', { agentId: drafter.id, threadId, body: 'Yes, from 10am.' })).turn;
      expect(draft).toEqual({
        id: expect.stringMatching(UUID),
        status: 'AWAITING_APPROVAL',
        threadId,
        messageId: null,
        createdAt: expect.stringMatching(ISO_MS),
        agent: { id: drafter.id, name: 'Drafter', mode: 'DRAFT' },
        body: 'Yes, from 10am.',
        bodyLength: 15,
        truncated: false,
        decidedByUserId: null,
        decidedAt: null,
        rejectionReason: null,
      });
      expect(await turnEvents(draft.id)).toEqual(['agent_turn.awaiting_approval']);
      expect(await m.db.query(`SELECT id FROM messages WHERE thread_id = $1 AND body = $2`, [threadId, 'Yes, from 10am.'])).toEqual([]);
      // The REST twin makes the same kind of turn.
      const rest = await postTurn(s.apiKey, drafter.id, { threadId, body: 'Yes, from 10am.' });
      expect({ ...rest, id: draft.id, createdAt: draft.createdAt, bodyLength: 15, truncated: false }).toEqual(draft);

      const sent = (await toolOk(m, s.apiKey, 'create_agent_turn', { agentId: sender.id, threadId, body: 'Sunday 10am to 4pm.' })).turn;
      expect(sent).toMatchObject({
        status: 'SENT',
        messageId: expect.stringMatching(UUID),
        agent: { id: sender.id, mode: 'AUTO' },
        body: 'Sunday 10am to 4pm.',
      });
      expect(await turnEvents(sent.id)).toEqual(['agent_turn.sent']);
      await waitUntil(() => m.carried.find((c) => c.body === 'Sunday 10am to 4pm.'), 'the carrier to get the AUTO reply');
      expect(m.carried.find((c) => c.body === 'Sunday 10am to 4pm.')).toEqual({ from: phone.address, to: partner, body: 'Sunday 10am to 4pm.' });
    });

    it("refuses what the REST route refuses, naming the field: another line's agent or thread, another org, a bad body", async () => {
      const s = await createSession(m.admin, { lines: ['PHONE_NUMBER', 'PHONE_NUMBER'] });
      const [front, back] = s.lines;
      const agent = await agentOn(front.id, 'Front', 'AUTO');
      const { threadId } = await inboundSms(m, front.address, partnerPhone(), 'hi');
      const backThread = (await inboundSms(m, back.address, partnerPhone(), 'hi')).threadId;
      const backOnly = await keyFor(s, [back.address]);
      const other = await createSession(m.admin);

      for (const key of [backOnly, other.apiKey]) {
        expect(await toolError(m, key, 'create_agent_turn', { agentId: agent.id, threadId, body: 'not mine' })).toBe(`agent ${agent.id} not found`);
      }
      expect(await toolError(m, s.apiKey, 'create_agent_turn', { agentId: agent.id, threadId: backThread, body: 'wrong line' })).toBe(
        `thread ${backThread} not found on the line of agent ${agent.id}`,
      );
      const cases: Array<[Json, string]> = [
        [{ agentId: agent.id, threadId }, 'invalid arguments: body is required'],
        [{ agentId: agent.id, threadId, body: '' }, 'invalid arguments: body must NOT have fewer than 1 characters'],
        [{ agentId: agent.id, threadId, body: '   ' }, 'body must not be blank'],
        [{ agentId: agent.id, threadId, body: 'x'.repeat(1601) }, 'body must be at most 1600 characters on an SMS thread'],
        [{ agentId: 'front', threadId, body: 'x' }, 'invalid arguments: agentId must match format "uuid"'],
        [{ threadId, body: 'x' }, 'invalid arguments: agentId is required'],
      ];
      for (const [args, message] of cases) expect(await toolError(m, s.apiKey, 'create_agent_turn', args)).toBe(message);
      // Nothing of a refused call was kept.
      expect((await toolOk(m, s.apiKey, 'list_agent_turns', {})).turns).toEqual([]);
    });
  });

  describe('approve_agent_turn with an edited body', () => {
    it('sends the edited body, stores it on the turn, and refuses a body an SMS could not carry (the draft stays undecided)', async () => {
      const s = await createSession(m.admin, { lines: ['PHONE_NUMBER'] });
      const phone = s.lines[0];
      const partner = partnerPhone();
      const agent = await agentOn(phone.id, 'Editor', 'DRAFT');
      const { threadId } = await inboundSms(m, phone.address, partner, 'Can I bring my dog?');
      const draft = await postTurn(s.apiKey, agent.id, { threadId, body: 'Sure.' });

      expect(await toolError(m, s.apiKey, 'approve_agent_turn', { turnId: draft.id, body: 'x'.repeat(1601) })).toBe(
        'body must be at most 1600 characters on an SMS thread',
      );
      expect(await toolError(m, s.apiKey, 'approve_agent_turn', { turnId: draft.id, body: ' \n ' })).toBe('body must not be blank');
      expect(await toolError(m, s.apiKey, 'approve_agent_turn', { turnId: draft.id, body: '' })).toBe(
        'invalid arguments: body must NOT have fewer than 1 characters',
      );
      expect((await toolOk(m, s.apiKey, 'get_agent_turn', { turnId: draft.id })).turn).toEqual({ ...draft, bodyLength: 5, truncated: false });

      const edited = 'Sure, dogs are welcome on the terrace.';
      const approved = (await toolOk(m, s.apiKey, 'approve_agent_turn', { turnId: draft.id, body: edited })).turn;
      expect(approved).toEqual({
        ...draft,
        status: 'SENT',
        body: edited,
        bodyLength: edited.length,
        truncated: false,
        messageId: expect.stringMatching(UUID),
        decidedByUserId: s.userId,
        decidedAt: expect.any(String),
      });
      expect((await toolOk(m, s.apiKey, 'get_agent_turn', { turnId: draft.id })).turn).toEqual(approved);
      // What is sent, what the message holds, and what agent_turn.sent points at: the edited text.
      expect((await toolOk(m, s.apiKey, 'get_message', { messageId: approved.messageId })).message).toMatchObject({ body: edited, direction: 'OUTBOUND' });
      expect(await turnEvents(draft.id)).toEqual(['agent_turn.awaiting_approval', 'agent_turn.sent']);
      await waitUntil(() => m.carried.find((c) => c.body === edited), 'the carrier to get the edited reply');
      expect(m.carried.filter((c) => c.to === partner).map((c) => c.body)).toEqual([edited]);
      expect(await toolError(m, s.apiKey, 'approve_agent_turn', { turnId: draft.id, body: 'again' })).toMatch(/is SENT; only a turn AWAITING_APPROVAL/);
    });
  });

  describe('get_agent_turn', () => {
    it("answers a turn with its drafted body, then as decided; another line's key and another org read it as not found", async () => {
      const s = await createSession(m.admin, { lines: ['PHONE_NUMBER', 'EMAIL_ACCOUNT'] });
      const phone = line(s, 'PHONE_NUMBER');
      const agent = await agentOn(phone.id, 'Front desk', 'DRAFT');
      const { threadId } = await inboundSms(m, phone.address, partnerPhone(), 'Table for two at 7?');
      const draft = await postTurn(s.apiKey, agent.id, { threadId, body: 'Yes, 7pm works.' });

      const got = (await toolOk(m, s.apiKey, 'get_agent_turn', { turnId: draft.id })).turn;
      expect(got).toEqual({
        id: draft.id,
        status: 'AWAITING_APPROVAL',
        threadId,
        messageId: null,
        createdAt: expect.stringMatching(ISO_MS),
        agent: { id: agent.id, name: 'Front desk', mode: 'DRAFT' },
        body: 'Yes, 7pm works.',
        bodyLength: 15,
        truncated: false,
        decidedByUserId: null,
        decidedAt: null,
        rejectionReason: null,
      });
      expect(got).toEqual({ ...draft, bodyLength: 15, truncated: false });

      const rejected = (await toolOk(m, s.apiKey, 'reject_agent_turn', { turnId: draft.id })).turn;
      expect((await toolOk(m, s.apiKey, 'get_agent_turn', { turnId: draft.id })).turn).toEqual({
        ...draft,
        bodyLength: 15,
        truncated: false,
        status: 'REJECTED',
        decidedByUserId: s.userId,
        decidedAt: rejected.decidedAt,
      });

      const emailOnly = await keyFor(s, [line(s, 'EMAIL_ACCOUNT').address]);
      const other = await createSession(m.admin);
      for (const key of [emailOnly, other.apiKey]) {
        expect(await toolError(m, key, 'get_agent_turn', { turnId: draft.id })).toBe(`agent turn ${draft.id} not found`);
      }
      const ghost = randomUUID();
      expect(await toolError(m, s.apiKey, 'get_agent_turn', { turnId: ghost })).toBe(`agent turn ${ghost} not found`);
      expect(await toolError(m, s.apiKey, 'get_agent_turn', { turnId: 'x' })).toBe('invalid arguments: turnId must match format "uuid"');
    });
  });

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
        notesTruncated: false,
        createdAt: expect.stringMatching(ISO_MS),
        updatedAt: expect.stringMatching(ISO_MS),
        // Created in one transaction: in either order.
        identities: expect.arrayContaining([
          { id: expect.stringMatching(UUID), kind: 'PHONE', value: partner, displayName: null },
          { id: expect.stringMatching(UUID), kind: 'EMAIL', value: 'ada@example.org', displayName: 'Ada L.' },
        ]),
        optedOut: [],
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
