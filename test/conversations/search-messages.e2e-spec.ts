import { randomBytes } from 'node:crypto';
import { SEARCH_EXPRESSIONS } from '../../src/conversations/search/search.repository';
import { toolError, toolOk } from '../support/mcp';
import { createMessagingTestApp, extractionIdle, inboundSms, MessagingTestApp, partnerPhone } from '../support/messaging-hooks';
import { createSession, Session } from '../support/session';
import { INGEST_TOKEN } from '../support/test-env';

/**
 * search_messages through real MCP calls: ranking, bounded snippets, attachment text once
 * extracted, the caller's org and lines only, the filters, paging by signed cursor, bad queries,
 * and the GIN indexes in the plan. The e2e database is shared by the test files: every word
 * searched for is made up for this run, so only this file's messages can match.
 */
jest.setTimeout(90_000);

type Hit = {
  messageId: string;
  threadId: string;
  channel: string;
  matchedIn: 'body' | 'attachment';
  attachment: { id: string; filename: string } | null;
  snippet: string;
  rank: number;
  subject: string | null;
};
type Page = { hits: Hit[]; nextCursor: string | null };

/** A word nobody else's messages hold: letters only, so the parser reads it as one plain word. */
function word(): string {
  return `w${Array.from(randomBytes(10), (b) => String.fromCharCode(97 + (b % 26))).join('')}`;
}

function emailWithText(to: string, from: string, subject: string, body: string, filename: string, text: string): string {
  const boundary = `b_${randomBytes(6).toString('hex')}`;
  return [
    `From: Partner <${from}>`,
    `To: <${to}>`,
    `Subject: ${subject}`,
    `Message-ID: <${randomBytes(8).toString('hex')}@search.example>`,
    `Date: ${new Date().toUTCString()}`,
    'MIME-Version: 1.0',
    `Content-Type: multipart/mixed; boundary="${boundary}"`,
    '',
    `--${boundary}`,
    'Content-Type: text/plain; charset=utf-8',
    '',
    body,
    `--${boundary}`,
    `Content-Type: text/plain; charset=utf-8; name="${filename}"`,
    `Content-Disposition: attachment; filename="${filename}"`,
    '',
    text,
    `--${boundary}--`,
    '',
  ].join('\r\n');
}

describe('search_messages', () => {
  let m: MessagingTestApp;
  let s: Session;
  let phone: string;
  let email: string;
  const W = { ranked: word(), attached: word(), page: word(), other: word(), subject: word(), old: word() };
  const ids: Record<string, { messageId: string; threadId: string }> = {};

  beforeAll(async () => {
    m = await createMessagingTestApp();
    s = await createSession(m.admin, { lines: ['PHONE_NUMBER', 'EMAIL_ACCOUNT'] });
    phone = s.lines.find((l) => l.type === 'PHONE_NUMBER')!.address;
    email = s.lines.find((l) => l.type === 'EMAIL_ACCOUNT')!.address;
    const partner = partnerPhone();
    // Ranking: three occurrences in a short text beat one in a longer one.
    ids.many = await inboundSms(m, phone, partner, `${W.ranked} ${W.ranked} ${W.ranked} shipment`);
    ids.once = await inboundSms(
      m,
      phone,
      partnerPhone(),
      `We talked about ${W.ranked} yesterday, and about many other things that have nothing to do with it at all, as people do`,
    );
    ids.old = await inboundSms(m, phone, partner, `${W.ranked} ${W.old} from long ago`);
    await m.db.query(`UPDATE messages SET created_at = now() - interval '30 days' WHERE id = $1`, [ids.old.messageId]);
    // The same words on a line of the same org the caller is not a member of, and in another org.
    const colleague = await createSession(m.admin, { orgId: s.orgId, lines: ['PHONE_NUMBER'] });
    ids.otherLine = await inboundSms(m, colleague.lines[0].address, partnerPhone(), `${W.ranked} ${W.other} on a colleague's line`);
    const otherOrg = await createSession(m.admin, { lines: ['PHONE_NUMBER'] });
    ids.otherOrg = await inboundSms(m, otherOrg.lines[0].address, partnerPhone(), `${W.ranked} ${W.other} in another org`);
    // An email whose text attachment holds a word its body does not, and a word only its subject has.
    const raw = emailWithText(
      email,
      `partner.${W.attached}@example.org`,
      `Quarterly ${W.subject} figures`,
      `See the attached notes about ${W.ranked}.`,
      'notes.txt',
      `Internal notes.\nThe ${W.attached} project is late.\n`,
    );
    const res = await m
      .http()
      .post('/ingest/email/inbound')
      .set('Authorization', `Bearer ${INGEST_TOKEN}`)
      .set('Content-Type', 'message/rfc822')
      .send(raw)
      .expect(201);
    ids.email = { messageId: res.body.messageId, threadId: res.body.threadId };
    ids.attachment = { messageId: res.body.attachmentIds[0], threadId: res.body.threadId };
    await extractionIdle(m);
  });
  afterAll(async () => {
    await m?.close();
  });

  it('ranks the best match first, with a bounded snippet that marks the words, and only on the caller’s lines', async () => {
    const page = await toolOk<Page>(m, s.apiKey, 'search_messages', { query: W.ranked });
    expect(page.hits[0].messageId).toBe(ids.many.messageId);
    expect(page.hits.map((h) => h.messageId).sort()).toEqual([ids.many.messageId, ids.once.messageId, ids.old.messageId, ids.email.messageId].sort());
    for (let i = 1; i < page.hits.length; i += 1) expect(page.hits[i - 1].rank).toBeGreaterThanOrEqual(page.hits[i].rank);
    expect(page.hits.map((h) => h.messageId)).not.toContain(ids.otherLine.messageId);
    expect(page.hits.map((h) => h.messageId)).not.toContain(ids.otherOrg.messageId);
    const rankOf = (id: string) => page.hits.find((h) => h.messageId === id)!.rank;
    expect(rankOf(ids.many.messageId)).toBeGreaterThan(rankOf(ids.once.messageId));
    for (const hit of page.hits) {
      expect(hit.snippet).toContain(`**${W.ranked}**`);
      expect(Array.from(hit.snippet).length).toBeLessThanOrEqual(400);
      expect(hit.snippet).not.toMatch(/\n/);
      expect(hit).toMatchObject({ matchedIn: 'body', attachment: null });
    }
    expect(page.nextCursor).toBeNull();
    // A long body: the snippet stays bounded and is cut around the word.
    const long = word();
    const filler = Array.from({ length: 500 }, (_, i) => `filler${i}`).join(' ');
    const longSms = await inboundSms(m, phone, partnerPhone(), `${filler} ${long} ${filler}`);
    const [hit] = (await toolOk<Page>(m, s.apiKey, 'search_messages', { query: long })).hits;
    expect(hit.messageId).toBe(longSms.messageId);
    expect(hit.snippet).toContain(`**${long}**`);
    expect(Array.from(hit.snippet).length).toBeLessThanOrEqual(400);
  });

  it('finds an email by its subject, and an attachment by its extracted text and by its filename', async () => {
    const bySubject = await toolOk<Page>(m, s.apiKey, 'search_messages', { query: W.subject });
    expect(bySubject.hits).toEqual([
      expect.objectContaining({ messageId: ids.email.messageId, channel: 'EMAIL', matchedIn: 'body', subject: `Quarterly ${W.subject} figures` }),
    ]);
    const byText = await toolOk<Page>(m, s.apiKey, 'search_messages', { query: `"${W.attached} project"` });
    expect(byText.hits).toEqual([
      expect.objectContaining({
        messageId: ids.email.messageId,
        threadId: ids.email.threadId,
        matchedIn: 'attachment',
        attachment: { id: ids.attachment.messageId, filename: 'notes.txt' },
      }),
    ]);
    expect(byText.hits[0].snippet).toContain(`**${W.attached}** **project**`);
    const byName = await toolOk<Page>(m, s.apiKey, 'search_messages', { query: `notes.txt ${W.attached}` });
    expect(byName.hits.map((h) => h.attachment?.filename)).toEqual(['notes.txt']);
    // The phrase in the wrong order, and the word excluded, find nothing.
    expect((await toolOk<Page>(m, s.apiKey, 'search_messages', { query: `"project ${W.attached}"` })).hits).toEqual([]);
    expect((await toolOk<Page>(m, s.apiKey, 'search_messages', { query: `${W.attached} -project` })).hits).toEqual([]);
  });

  it('never finds another org’s or another line’s messages, and a thread the key may not use is not found', async () => {
    expect((await toolOk<Page>(m, s.apiKey, 'search_messages', { query: W.other })).hits).toEqual([]);
    for (const foreign of [ids.otherLine, ids.otherOrg]) {
      const error = await toolError(m, s.apiKey, 'search_messages', { query: W.ranked, threadId: foreign.threadId });
      expect(error).toBe(await toolError(m, s.apiKey, 'get_thread', { threadId: foreign.threadId }));
      expect(error).toContain('not found');
    }
  });

  it('filters by thread, channel and time', async () => {
    const inThread = await toolOk<Page>(m, s.apiKey, 'search_messages', { query: W.ranked, threadId: ids.many.threadId });
    expect(inThread.hits.map((h) => h.messageId).sort()).toEqual([ids.many.messageId, ids.old.messageId].sort());
    const emails = await toolOk<Page>(m, s.apiKey, 'search_messages', { query: W.ranked, channel: 'EMAIL' });
    expect(emails.hits.map((h) => h.messageId)).toEqual([ids.email.messageId]);
    const sms = await toolOk<Page>(m, s.apiKey, 'search_messages', { query: W.ranked, channel: 'SMS' });
    expect(sms.hits.every((h) => h.channel === 'SMS')).toBe(true);
    expect(sms.hits).toHaveLength(3);
    const recent = await toolOk<Page>(m, s.apiKey, 'search_messages', { query: W.ranked, since: new Date(Date.now() - 86_400_000).toISOString() });
    expect(recent.hits.map((h) => h.messageId)).not.toContain(ids.old.messageId);
    expect(recent.hits).toHaveLength(3);
    expect((await toolOk<Page>(m, s.apiKey, 'search_messages', { query: W.old, since: new Date(Date.now() - 86_400_000).toISOString() })).hits).toEqual([]);
  });

  it('pages through every hit exactly once, and refuses an edited cursor or one of another search', async () => {
    const expected: string[] = [];
    for (let i = 0; i < 45; i += 1) {
      // Varying counts of the word: ranks differ, and some are equal (ties are ordered by id).
      const sms = await inboundSms(
        m,
        phone,
        partnerPhone(),
        `${Array(1 + (i % 4))
          .fill(W.page)
          .join(' ')} item ${i}`,
      );
      expected.push(sms.messageId);
    }
    const seen: string[] = [];
    const sizes: number[] = [];
    let cursor: string | undefined;
    let last = Infinity;
    do {
      const page: Page = await toolOk<Page>(m, s.apiKey, 'search_messages', { query: W.page, ...(cursor && { cursor }) });
      sizes.push(page.hits.length);
      for (const hit of page.hits) {
        expect(hit.rank).toBeLessThanOrEqual(last);
        last = hit.rank;
        seen.push(hit.messageId);
      }
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    expect(sizes).toEqual([20, 20, 5]);
    expect(new Set(seen).size).toBe(seen.length);
    expect([...seen].sort()).toEqual([...expected].sort());

    const first = await toolOk<Page>(m, s.apiKey, 'search_messages', { query: W.page });
    const good = first.nextCursor!;
    const [payload, mac] = good.split('.');
    const edited = `${Buffer.from(
      Buffer.from(payload, 'base64url')
        .toString('utf8')
        .replace(/"[0-9.e-]+\|/, '"9|'),
      'utf8',
    ).toString('base64url')}.${mac}`;
    expect(await toolError(m, s.apiKey, 'search_messages', { query: W.page, cursor: edited })).toContain('cursor is not valid');
    const otherMac = `${payload}.${mac[0] === 'A' ? 'B' : 'A'}${mac.slice(1)}`;
    expect(await toolError(m, s.apiKey, 'search_messages', { query: W.page, cursor: otherMac })).toContain('cursor is not valid');
    expect(await toolError(m, s.apiKey, 'search_messages', { query: `${W.page} item`, cursor: good })).toContain('cursor belongs to another search');
    expect(await toolError(m, s.apiKey, 'search_messages', { query: W.page, channel: 'SMS', cursor: good })).toContain('cursor belongs to another search');
    // Another tool's cursor is refused too.
    const threads = await toolOk<{ nextCursor: string | null }>(m, s.apiKey, 'list_threads', { limit: 1 });
    expect(await toolError(m, s.apiKey, 'search_messages', { query: W.page, cursor: threads.nextCursor! })).toContain('cursor is not valid');
  });

  it('refuses a blank query, one without words, one that only excludes, and one too long, naming query', async () => {
    const cases: Array<[string, RegExp]> = [
      ['', /query/],
      ['   ', /query is blank/],
      ['!!! ... ???', /query has no words to search for/],
      [`-${W.ranked}`, /query only excludes words/],
      ['x'.repeat(501), /query/],
    ];
    for (const [query, message] of cases) {
      const error = await toolError(m, s.apiKey, 'search_messages', { query });
      expect(error).toMatch(message);
      expect(error).toContain('query');
    }
    expect(await toolError(m, s.apiKey, 'search_messages', { query: 'x'.repeat(501) })).toMatch(/must NOT have more than 500 characters/);
    expect(await toolError(m, s.apiKey, 'search_messages', { query: W.ranked, since: 'yesterday' })).toMatch(/since/);
    expect(await toolError(m, s.apiKey, 'search_messages', { query: W.ranked, channel: 'FAX' })).toMatch(/channel/);
  });

  it('ranks the newest 10,000 matches of a very common word; narrowing reaches the older ones', async () => {
    const common = word();
    // The best match (the word three times, alone) is the oldest, on a thread of its own...
    const best = await inboundSms(m, phone, partnerPhone(), `${common} ${common} ${common}`);
    await m.db.query(`UPDATE messages SET created_at = now() - interval '400 days' WHERE id = $1`, [best.messageId]);
    // ...behind 10,000 newer, weaker matches on another thread, written with SQL.
    const filler = await inboundSms(m, phone, partnerPhone(), `${common} first of many in a longer message`);
    await m.db.query(
      `INSERT INTO messages (org_id, thread_id, line_id, channel, direction, status, body, from_value, from_kind, to_value, to_kind, created_at)
       SELECT org_id, thread_id, line_id, channel, direction, status, body || ' ' || g, from_value, from_kind, to_value, to_kind, now() - g * interval '1 second'
         FROM messages, generate_series(1, 10000) g WHERE id = $1`,
      [filler.messageId],
    );
    const first = await toolOk(m, s.apiKey, 'search_messages', { query: common });
    expect(first.hits).toHaveLength(20);
    expect(first.hits.map((hit: { messageId: string }) => hit.messageId)).not.toContain(best.messageId);
    const narrowed = await toolOk(m, s.apiKey, 'search_messages', { query: common, threadId: best.threadId });
    expect(narrowed.hits.map((hit: { messageId: string }) => hit.messageId)).toEqual([best.messageId]);
  });

  it('looks words up in the GIN indexes (with sequential scans off, as on a table too big to scan)', async () => {
    const plan = async (sql: string) =>
      m.db.transaction(async (tx) => {
        await tx.query('SET LOCAL enable_seqscan = off');
        const rows: Array<{ 'QUERY PLAN': string }> = await tx.query(`EXPLAIN ${sql.replace(':query', `'${W.ranked}'`)}`);
        return rows.map((r) => r['QUERY PLAN']).join('\n');
      });
    const { messageVector, attachmentVector, query } = SEARCH_EXPRESSIONS;
    expect(await plan(`SELECT m.id FROM messages m WHERE ${messageVector} @@ ${query}`)).toMatch(/Bitmap Index Scan on messages_search_idx/);
    expect(await plan(`SELECT a.id FROM attachments a WHERE ${attachmentVector} @@ ${query}`)).toMatch(/Bitmap Index Scan on attachments_search_idx/);
  });
});
