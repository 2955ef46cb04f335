import { AttachmentUrls } from '../../src/common/attachment-urls';
import { EVENT_KINDS, EventKind } from '../../src/events/event-kinds';
import { PersonData } from '../../src/conversations/conversation-vocabulary';
import { MessageEventData } from '../../src/events/event-payloads';
import { AGENT_KINDS, fixtureData, fixtureEvent, MESSAGE_KINDS } from '../fixtures/events';
import { closeDeliveryTestApp, createDeliveryTestApp, DeliveryTestApp, publishAll, register, waitForRequests } from '../support/delivery';
import { ReceivedRequest, TestReceiver } from '../support/receiver';
import { createSession, Session } from '../support/session';

/** What the kind adds to the message.received shape (spec: Events table). */
const KIND_EXTRAS: Partial<Record<EventKind, string[]>> = {
  'message.status_changed': ['previousStatus', 'currentStatus', 'error'],
  'email.opened': ['open'],
  'attachment.extracted': ['attachment', 'calendarEvents'],
};

const ATTACHMENT_URL = /^http:\/\/127\.0\.0\.1:3000\/attachments\/([^/?]+)\/download\?for=([A-Za-z0-9_-]{22})&expires=(\d+)&sig=([0-9a-f]{64})$/;

interface Envelope {
  id: string;
  type: EventKind;
  mode: string;
  data: any;
}

jest.setTimeout(30_000);

describe('payloads: every kind in concise and verbose mode', () => {
  let t: DeliveryTestApp;
  const receiver = new TestReceiver();
  let base: string;
  let s: Session;
  const got: Record<string, Array<{ req: ReceivedRequest; env: Envelope }>> = {};

  const PATHS = { concise: '/concise', verbose3: '/verbose-3', verbose0: '/verbose-0', verboseDefault: '/verbose-default' } as const;

  beforeAll(async () => {
    base = await receiver.start();
    t = await createDeliveryTestApp({ queueTag: 'payloads' });
    s = await createSession(t.admin, { tier: 'POWER' });
    const events = [...EVENT_KINDS];
    await register(t, s.apiKey, { url: `${base}${PATHS.concise}`, events });
    await register(t, s.apiKey, { url: `${base}${PATHS.verbose3}`, events, mode: 'verbose', messageHistoryCount: 3 });
    await register(t, s.apiKey, { url: `${base}${PATHS.verbose0}`, events, mode: 'verbose', messageHistoryCount: 0 });
    await register(t, s.apiKey, { url: `${base}${PATHS.verboseDefault}`, events, mode: 'verbose' });

    const email = s.lines.find((l) => l.type === 'EMAIL_ACCOUNT')!.id;
    const phone = s.lines.find((l) => l.type === 'PHONE_NUMBER')!.id;
    const published = [
      ...EVENT_KINDS.map((kind) => fixtureEvent(kind, { orgId: s.orgId, lineId: kind === 'message.status_changed' ? phone : email })),
      fixtureEvent('message.received', { orgId: s.orgId, lineId: phone }, { channel: 'SMS' }),
    ];
    await publishAll(t, published);
    for (const path of Object.values(PATHS)) {
      const reqs = await waitForRequests(receiver, path, published.length);
      got[path] = reqs.map((req) => ({ req, env: JSON.parse(req.body) }));
    }
  });
  afterAll(async () => {
    await closeDeliveryTestApp(t);
    await receiver.stop();
  });

  /** The one delivery of `kind` on `path` (message.received: the EMAIL one unless told). */
  function one(path: string, kind: EventKind, channel: 'EMAIL' | 'SMS' | undefined = undefined) {
    const found = got[path].filter((g) => g.env.type === kind && (!channel || g.env.data.message?.channel === channel));
    const wanted = kind === 'message.received' && !channel ? found.filter((g) => g.env.data.message.channel === 'EMAIL') : found;
    expect(wanted).toHaveLength(1);
    return wanted[0];
  }

  const conciseThread = (d: MessageEventData) => ({
    id: d.thread.id,
    subject: d.thread.subject,
    lastMessageAt: d.thread.lastMessageAt,
    messageCount: d.thread.messageCount,
  });
  const concisePerson = (p: PersonData | null) => (p === null ? null : { id: p.id, displayName: p.displayName });
  const pick = (d: Record<string, unknown>, keys: string[]) => Object.fromEntries(keys.map((k) => [k, d[k]]));

  it('each endpoint got every event once, in its own mode', () => {
    for (const [path, mode] of [
      [PATHS.concise, 'concise'],
      [PATHS.verbose3, 'verbose'],
      [PATHS.verbose0, 'verbose'],
      [PATHS.verboseDefault, 'verbose'],
    ]) {
      expect(got[path].map((g) => g.env.type).sort()).toEqual([...EVENT_KINDS, 'message.received'].sort());
      expect(new Set(got[path].map((g) => g.env.mode))).toEqual(new Set([mode]));
      expect(new Set(got[path].map((g) => g.env.id)).size).toBe(got[path].length);
    }
  });

  describe.each(MESSAGE_KINDS)('%s', (kind) => {
    const extras = KIND_EXTRAS[kind] ?? [];

    it('concise: thread, person, labels, message (+ kind extras) and nothing else', () => {
      const full = fixtureData(kind) as MessageEventData;
      const { data } = one(PATHS.concise, kind).env;
      expect(Object.keys(data).sort()).toEqual(['labels', 'message', 'person', 'thread', ...extras].sort());
      expect(Object.keys(data.thread).sort()).toEqual(['id', 'lastMessageAt', 'messageCount', 'subject']);
      if (data.person !== null) expect(Object.keys(data.person).sort()).toEqual(['displayName', 'id']);
      expect(data).toEqual({
        thread: conciseThread(full),
        person: concisePerson(full.person),
        labels: full.labels,
        message: full.message,
        ...pick(full as unknown as Record<string, unknown>, extras),
      });
      expect(Object.keys(data.message).sort()).toEqual([
        'body',
        'bodyTruncated',
        'channel',
        'createdAt',
        'direction',
        'fromIdentity',
        'id',
        'sentAt',
        'status',
        'threadId',
        'toIdentity',
      ]);
    });

    it('verbose: adds recentMessages (most recent, capped), identities, signed attachment URLs, emailHeaders on EMAIL, labelConfidence', () => {
      const full = fixtureData(kind) as MessageEventData;
      const { req, env } = one(PATHS.verbose3, kind);
      const { data } = env;
      const isEmail = full.message.channel === 'EMAIL';
      expect(Object.keys(data).sort()).toEqual(
        ['attachments', 'labelConfidence', 'labels', 'message', 'person', 'thread', ...extras, ...(isEmail ? ['emailHeaders'] : [])].sort(),
      );
      expect(data.thread).toEqual({ ...conciseThread(full), recentMessages: full.thread.recentMessages.slice(-3) });
      expect(data.person).toEqual(
        full.person === null ? null : { id: full.person.id, displayName: full.person.displayName, identities: full.person.identities },
      );
      expect(data.labels).toEqual(full.labels);
      expect(data.message).toEqual(full.message);
      expect(data.labelConfidence).toEqual(full.labelConfidence);
      if (isEmail) expect(data.emailHeaders).toEqual(full.emailHeaders);
      for (const key of extras) expect(data[key]).toEqual((full as unknown as Record<string, unknown>)[key]);

      expect(data.attachments).toHaveLength(full.attachments.length);
      data.attachments.forEach((a: Record<string, unknown>, i: number) => {
        expect(Object.keys(a).sort()).toEqual(['filename', 'id', 'mimeType', 'sizeBytes', 'url']);
        expect(a).toEqual({ ...full.attachments[i], url: expect.stringMatching(ATTACHMENT_URL) });
        const [, id, holder, expires, sig] = ATTACHMENT_URL.exec(a.url as string)!;
        expect(decodeURIComponent(id)).toBe(full.attachments[i].id);
        // Valid one hour from the attempt.
        expect(Math.abs(Number(expires) - (req.receivedAt / 1000 + 3600))).toBeLessThan(10);
        // Minted for the endpoint's owner (no key): it works while that user may see the line.
        expect(t.app.get(AttachmentUrls).verify(full.attachments[i].id, { for: holder, expires, sig }, new Date())).toEqual({ userId: s.userId, keyId: null });
        expect(t.app.get(AttachmentUrls).verify(`${full.attachments[i].id}x`, { for: holder, expires, sig }, new Date())).toBeNull();
      });
    });

    it('verbose with messageHistoryCount 0 has recentMessages []; with the default 10 all six', () => {
      const full = fixtureData(kind) as MessageEventData;
      expect(one(PATHS.verbose0, kind).env.data.thread.recentMessages).toEqual([]);
      const all = one(PATHS.verboseDefault, kind).env.data.thread.recentMessages;
      expect(all).toEqual(full.thread.recentMessages.slice(-10));
      expect(all.length).toBe(full.thread.recentMessages.length);
    });
  });

  it('message.received on SMS: verbose has no emailHeaders, concise is the base shape', () => {
    const full = fixtureData('message.received', { channel: 'SMS' });
    const verbose = one(PATHS.verbose3, 'message.received', 'SMS').env.data;
    expect(verbose).not.toHaveProperty('emailHeaders');
    expect(Object.keys(verbose).sort()).toEqual(['attachments', 'labelConfidence', 'labels', 'message', 'person', 'thread']);
    expect(verbose.message).toEqual(full.message);
    const concise = one(PATHS.concise, 'message.received', 'SMS').env.data;
    expect(Object.keys(concise).sort()).toEqual(['labels', 'message', 'person', 'thread']);
  });

  it('thread.created keeps an orphan identity as person {id: null, displayName}', () => {
    const concise = one(PATHS.concise, 'thread.created').env.data;
    expect(concise.person).toEqual({ id: null, displayName: 'Ana Lucía Pérez' });
    expect(concise.thread.messageCount).toBe(1);
  });

  describe.each(AGENT_KINDS)('%s', (kind) => {
    it('concise: thread, person, labels, agentTurn; no message, attachments or headers', () => {
      const full = fixtureData(kind);
      const { data } = one(PATHS.concise, kind).env;
      expect(data).toEqual({
        thread: conciseThread(full as unknown as MessageEventData),
        person: concisePerson(full.person),
        labels: full.labels,
        agentTurn: full.agentTurn,
      });
      // agent_turn.rejected's fixture is a draft-only key's draft: it names the credential and carries the reason.
      const extra = kind === 'agent_turn.rejected' ? ['credential', 'rejectionReason'] : [];
      expect(Object.keys(data.agentTurn).sort()).toEqual(['agent', 'createdAt', 'id', 'messageId', 'status', 'threadId', ...extra].sort());
    });

    it('verbose: adds thread.recentMessages and person.identities only', () => {
      const full = fixtureData(kind);
      const { data } = one(PATHS.verbose3, kind).env;
      expect(Object.keys(data).sort()).toEqual(['agentTurn', 'labels', 'person', 'thread']);
      expect(data).toEqual({
        thread: { ...conciseThread(full as unknown as MessageEventData), recentMessages: full.thread.recentMessages.slice(-3) },
        person: { id: full.person!.id, displayName: full.person!.displayName, identities: full.person!.identities },
        labels: full.labels,
        agentTurn: full.agentTurn,
      });
      expect(one(PATHS.verbose0, kind).env.data.thread.recentMessages).toEqual([]);
    });
  });

  it.each(['contact.merged', 'email_account.health_changed'] as const)('%s: the same data in both modes', (kind) => {
    const full = fixtureData(kind);
    for (const path of Object.values(PATHS)) expect(one(path, kind).env.data).toEqual(full);
  });

  it('stores data once at dispatch without attachment URLs (they are signed per attempt)', async () => {
    const rows: Array<{ data: { attachments?: Array<Record<string, unknown>> } }> = await t.db.query(
      `SELECT p.data FROM webhook_deliveries d JOIN webhook_payloads p ON p.id = d.payload_id JOIN webhook_endpoints e ON e.id = d.endpoint_id
        WHERE e.user_id = $1 AND d.mode = 'verbose' AND d.event_type = 'message.received'`,
      [s.userId],
    );
    expect(rows.length).toBe(6);
    for (const row of rows) {
      expect(row.data.attachments!.length).toBeGreaterThan(0);
      for (const a of row.data.attachments!) expect(a).not.toHaveProperty('url');
    }
  });
});
