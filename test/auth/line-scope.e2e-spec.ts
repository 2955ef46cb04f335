import { randomBytes } from 'node:crypto';
import { AgentsService } from '../../src/agents/agents.service';
import { ApiKeysService } from '../../src/auth/api-keys.service';
import { Principal } from '../../src/identity/principal';
import { AttachmentsService } from '../../src/attachments/attachments.service';
import { ContactsService } from '../../src/conversations/contacts/contacts.service';
import { SearchService } from '../../src/conversations/search/search.service';
import { ThreadsService } from '../../src/conversations/threads/threads.service';
import { callTool, toolError, toolOk } from '../support/mcp';
import { createMessagingTestApp, MessagingTestApp, partnerPhone } from '../support/messaging-hooks';
import { createSession, Session, uniquePhone } from '../support/session';
import { INGEST_TOKEN } from '../support/test-env';

/**
 * Issue 32: one rule says which lines a caller may see (callerLines, auth/line-access.sql.ts),
 * and every read of a person's data applies it. A user whose membership of a line was removed,
 * or whose line was deleted, sees nothing of that line through any tool, REST route or download
 * link: not its threads, messages, search hits, attachments, agents or agent turns, nor the
 * identities of a contact who writes only to it. A line the user keeps shows all of that
 * throughout, so the test cannot pass by seeing nothing at all. The web app's only pages that
 * show a line's data are the webhook delivery log's, which apply the same rule
 * (test/delivery/delivery-line-access.e2e-spec.ts).
 *
 * The rule is also checked in SQL, at the time of each statement: a caller resolved while it
 * still had the line (as a long request's caller is) sees nothing of it once the line is gone.
 */
jest.setTimeout(60_000);

/** What one line holds, all of it reachable by a user of the line. */
interface LineData {
  lineId: string;
  threadId: string;
  messageId: string;
  attachmentId: string;
  /** A word only this line's message and attachment contain. */
  word: string;
  contactId: string;
  partner: string;
  agentId: string;
  turnId: string;
}

/** Everything of a line a key sees: ids found through each tool and route, or null where it read as not found. */
interface Seen {
  listThreads: string[];
  listThreadsOfLine: string[] | 'not found';
  getThread: string | null;
  getMessage: string | null;
  search: string[];
  searchInThread: string[] | 'not found';
  readAttachment: string | null;
  download: number;
  listAgents: string[];
  listTurns: string[];
  getTurn: string | null;
  createTurnRoute: number;
  rejectRoute: number;
  contactIdentities: string[];
  listedContactIdentities: string[];
}

describe('line scope: a line the caller lost shows nothing of its own', () => {
  let m: MessagingTestApp;
  let orgId: string;

  beforeAll(async () => {
    m = await createMessagingTestApp();
    orgId = (await createSession(m.admin, { role: 'OWNER', lines: [] })).orgId;
  });
  afterAll(async () => {
    await m?.close();
  });

  /** A user of the org with an ALL key and a phone line it keeps throughout. */
  async function userWithKeptLine(): Promise<{ s: Session; kept: LineData }> {
    const s = await createSession(m.admin, { orgId, role: 'MEMBER', lines: [] });
    return { s, kept: await populatedLine(s) };
  }

  /**
   * A new phone line of the org with `s`'s user on it, and on it: an inbound SMS with an
   * attachment (a thread, a message, a search hit), a contact for its partner, an agent and a
   * turn drafted by it.
   */
  async function populatedLine(s: Session): Promise<LineData> {
    const line = (await m.admin.post(`/admin/orgs/${orgId}/lines`, { type: 'PHONE_NUMBER', address: uniquePhone() }).expect(201)).body;
    await m.admin.put(`/admin/lines/${line.id}/members/${s.userId}`).expect(200);
    const word = `scope${randomBytes(6).toString('hex')}`;
    const partner = partnerPhone();
    const sms = await m
      .http()
      .post('/ingest/sms/inbound')
      .set('Authorization', `Bearer ${INGEST_TOKEN}`)
      .send({
        to: line.address,
        from: partner,
        body: `about ${word}`,
        providerMessageId: `scope-${randomBytes(6).toString('hex')}`,
        media: [{ filename: `${word}.txt`, mimeType: 'text/plain', contentBase64: Buffer.from(`${word} attached\n`).toString('base64') }],
      })
      .expect(201);
    const contact = await toolOk(m, s.apiKey, 'create_contact', { displayName: `Partner ${word}`, identities: [{ kind: 'PHONE', value: partner }] });
    const agent = (await m.admin.post(`/admin/lines/${line.id}/agents`, { name: `Agent ${word}`, mode: 'DRAFT' }).expect(201)).body;
    const turn = await m
      .http()
      .post(`/api/agents/${agent.id}/turns`)
      .set('Authorization', `Bearer ${s.apiKey}`)
      .send({ threadId: sms.body.threadId, body: 'draft' });
    expect(turn.status).toBe(201);
    return {
      lineId: line.id,
      threadId: sms.body.threadId,
      messageId: sms.body.messageId,
      attachmentId: sms.body.attachmentIds[0],
      word,
      contactId: contact.contact.id,
      partner,
      agentId: agent.id,
      turnId: turn.body.turn.id,
    };
  }

  /** A tool's result, or null when the tool answered that what it was asked for is not found. */
  async function readOrNotFound(key: string, tool: string, args: Record<string, unknown>): Promise<any> {
    const result = await callTool(m, key, tool, args);
    if (!result.isError) return result.structuredContent;
    expect(result.content[0].text).toMatch(/ not found$/);
    return null;
  }

  /** What the key sees of `line` (ids of that line only), through every tool and route that reads it; `link` is a download link minted while it could. */
  async function seen(s: Session, line: LineData, link: string): Promise<Seen> {
    const key = s.apiKey;
    const threadIds = (r: any): string[] => r.threads.map((x: any) => x.thread.id).filter((id: string) => id === line.threadId);
    const hitIds = (r: any): string[] => [...new Set<string>(r.hits.map((h: any) => h.messageId))];
    const orNotFound = (r: any, ids: (r: any) => string[]): string[] | 'not found' => (r === null ? 'not found' : ids(r));
    const url = new URL(link);
    const contact = await toolOk(m, key, 'get_contact', { contactId: line.contactId });
    const listed = await toolOk(m, key, 'list_contacts', { query: line.word });
    return {
      listThreads: threadIds(await toolOk(m, key, 'list_threads', { limit: 100 })),
      listThreadsOfLine: orNotFound(await readOrNotFound(key, 'list_threads', { lineId: line.lineId }), threadIds),
      getThread: (await readOrNotFound(key, 'get_thread', { threadId: line.threadId }))?.thread.id ?? null,
      getMessage: (await readOrNotFound(key, 'get_message', { messageId: line.messageId }))?.message.id ?? null,
      search: hitIds(await toolOk(m, key, 'search_messages', { query: line.word })),
      searchInThread: orNotFound(await readOrNotFound(key, 'search_messages', { query: line.word, threadId: line.threadId }), hitIds),
      readAttachment: (await readOrNotFound(key, 'read_attachment', { attachmentId: line.attachmentId }))?.attachment.id ?? null,
      download: (await fetch(`${m.baseUrl}${url.pathname}${url.search}`)).status,
      listAgents: (await toolOk(m, key, 'list_agents', {})).agents.map((a: any) => a.id).filter((id: string) => id === line.agentId),
      listTurns: (await toolOk(m, key, 'list_agent_turns', {})).turns.map((x: any) => x.id).filter((id: string) => id === line.turnId),
      getTurn: (await readOrNotFound(key, 'get_agent_turn', { turnId: line.turnId }))?.turn.id ?? null,
      createTurnRoute: (
        await m.http().post(`/api/agents/${line.agentId}/turns`).set('Authorization', `Bearer ${key}`).send({ threadId: line.threadId, body: 'again' })
      ).status,
      rejectRoute: (await m.http().post(`/api/agent-turns/${line.turnId}/reject`).set('Authorization', `Bearer ${key}`)).status,
      contactIdentities: contact.contact.identities.map((i: any) => i.value),
      listedContactIdentities: listed.contacts.filter((c: any) => c.id === line.contactId).flatMap((c: any) => c.identities.map((i: any) => i.value)),
    };
  }

  /** All of the line, as its user sees it through the tools and the download link (the REST routes' statuses are given beside it). */
  const all = (line: LineData): Omit<Seen, 'createTurnRoute' | 'rejectRoute'> => ({
    listThreads: [line.threadId],
    listThreadsOfLine: [line.threadId],
    getThread: line.threadId,
    getMessage: line.messageId,
    search: [line.messageId],
    searchInThread: [line.messageId],
    readAttachment: line.attachmentId,
    download: 200,
    listAgents: [line.agentId],
    listTurns: [line.turnId],
    getTurn: line.turnId,
    contactIdentities: [line.partner],
    listedContactIdentities: [line.partner],
  });

  /** Nothing of the line: each list leaves it out, each read of one of its ids answers not found. */
  const nothing: Seen = {
    listThreads: [],
    listThreadsOfLine: 'not found',
    getThread: null,
    getMessage: null,
    search: [],
    searchInThread: 'not found',
    readAttachment: null,
    download: 404,
    listAgents: [],
    listTurns: [],
    getTurn: null,
    createTurnRoute: 404,
    rejectRoute: 404,
    contactIdentities: [],
    listedContactIdentities: [],
  };

  const losses: Array<[string, (s: Session, line: LineData) => Promise<unknown>]> = [
    ['its membership of the line removed', (s, line) => m.admin.delete(`/admin/lines/${line.lineId}/members/${s.userId}`).expect(204)],
    ['the line deleted', (s, line) => m.admin.delete(`/admin/lines/${line.lineId}`).expect(204)],
  ];

  describe.each(losses)('a user with %s', (_, lose) => {
    it('sees none of the line through any tool, REST route or download link, and all of the line it kept', async () => {
      const { s, kept } = await userWithKeptLine();
      const lost = await populatedLine(s);
      const link = (await toolOk(m, s.apiKey, 'read_attachment', { attachmentId: lost.attachmentId })).downloadUrl;
      const keptLink = (await toolOk(m, s.apiKey, 'read_attachment', { attachmentId: kept.attachmentId })).downloadUrl;
      expect(await seen(s, lost, link)).toEqual({ ...all(lost), createTurnRoute: 201, rejectRoute: 200 });

      await lose(s, lost);

      expect(await seen(s, lost, link)).toEqual(nothing);
      expect(await seen(s, kept, keptLink)).toEqual({ ...all(kept), createTurnRoute: 201, rejectRoute: 200 });
      // Both ids, of a lost line and of no line at all, answer the same.
      expect(await toolError(m, s.apiKey, 'get_thread', { threadId: lost.threadId })).toBe(`thread ${lost.threadId} not found`);
    });

    it('a caller resolved while it still had the line sees none of it once it is gone (the rule is checked in SQL)', async () => {
      const { s, kept } = await userWithKeptLine();
      const lost = await populatedLine(s);
      const caller = (await m.app.get(ApiKeysService).resolve(s.apiKey))!;
      expect(caller.lines.map((l) => l.id).sort()).toEqual([kept.lineId, lost.lineId].sort());
      expect(await staleSeen(caller, lost)).toEqual(staleAll(lost));

      await lose(s, lost);

      expect(await staleSeen(caller, lost)).toEqual(staleNothing);
      expect(await staleSeen(caller, kept)).toEqual(staleAll(kept));
    });
  });

  /** What services answer a caller resolved earlier, for the line's ids (null: not found). */
  async function staleSeen(caller: Principal, line: LineData) {
    const threads = m.app.get(ThreadsService);
    const agents = m.app.get(AgentsService);
    const notFound = <T>(read: Promise<T>): Promise<T | null> =>
      read.catch((error: Error) => {
        expect(error.message).toMatch(/not found/);
        return null;
      });
    return {
      listThreads: (await threads.list(caller, { limit: 100 })).threads.map((x) => x.thread.id).filter((id) => id === line.threadId),
      listThreadsOfLine: (await threads.list(caller, { lineId: line.lineId })).threads.map((x) => x.thread.id),
      getThread: (await notFound(threads.get(caller, line.threadId)))?.thread.id ?? null,
      getMessage: (await notFound(threads.message(caller, line.messageId)))?.message.id ?? null,
      search: [...new Set((await m.app.get(SearchService).find(caller, { query: line.word })).hits.map((h) => h.messageId))],
      readAttachment: (await notFound(m.app.get(AttachmentsService).read(caller, line.attachmentId)))?.attachment.id ?? null,
      listAgents: (await agents.listAgents(caller, {})).agents.map((a) => a.id).filter((id) => id === line.agentId),
      listTurns: (await agents.list(caller, {})).turns.map((x) => x.id).filter((id) => id === line.turnId),
      getTurn: (await notFound(agents.getTurn(caller, line.turnId)))?.id ?? null,
      contactIdentities: (await m.app.get(ContactsService).get(caller, line.contactId)).contact.identities.map((i) => i.value),
    };
  }

  const staleAll = (line: LineData) => ({
    listThreads: [line.threadId],
    listThreadsOfLine: [line.threadId],
    getThread: line.threadId,
    getMessage: line.messageId,
    search: [line.messageId],
    readAttachment: line.attachmentId,
    listAgents: [line.agentId],
    listTurns: [line.turnId],
    getTurn: line.turnId,
    contactIdentities: [line.partner],
  });

  const staleNothing = {
    listThreads: [],
    listThreadsOfLine: [],
    getThread: null,
    getMessage: null,
    search: [],
    readAttachment: null,
    listAgents: [],
    listTurns: [],
    getTurn: null,
    contactIdentities: [],
  };
});
