import { randomUUID } from 'node:crypto';
import { createMessagingTestApp, inboundSms, MessagingTestApp } from '../support/messaging-hooks';
import { toolOk } from '../support/mcp';
import { createSession, Session, uniquePhone } from '../support/session';
import { waitUntil } from '../support/wait';
import { PageBrowser, postForm, signInBrowser } from '../support/web';

/**
 * Approvals (docs/web.md): the drafts of DRAFT agents, approved, edited or rejected from the page
 * through the service the approve_agent_turn / reject_agent_turn tools call. Sending goes to a
 * carrier stand-in (a real HTTP server) through the outbound job, as in production.
 */
describe('web: the Approvals page', () => {
  let t: MessagingTestApp;

  beforeAll(async () => {
    t = await createMessagingTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  interface Org {
    owner: Session;
    browser: PageBrowser;
    phone: Session['lines'][number];
    agentId: string;
    threadId: string;
    partner: string;
  }

  /** An org whose owner is signed in, a DRAFT agent on its phone line, and a thread an inbound SMS opened. */
  async function org(inboundBody = 'Can I book a table for two?'): Promise<Org> {
    const owner = await createSession(t.admin, { lines: ['PHONE_NUMBER'] });
    const phone = owner.lines[0];
    const agentId = (await t.admin.post(`/admin/lines/${phone.id}/agents`, { name: 'Front desk', mode: 'DRAFT' }).expect(201)).body.id as string;
    const partner = uniquePhone();
    const { threadId } = await inboundSms(t, phone.address, partner, inboundBody);
    return { owner, browser: await signInBrowser(t, owner.userId), phone, agentId, threadId, partner };
  }

  /** The agent runtime drafts a reply (REST, with the owner's key): it waits for approval. */
  async function draft(o: Org, body: string, threadId = o.threadId): Promise<string> {
    const res = await t.http().post(`/api/agents/${o.agentId}/turns`).set('Authorization', `Bearer ${o.owner.apiKey}`).send({ threadId, body }).expect(201);
    expect(res.body.turn.status).toBe('AWAITING_APPROVAL');
    return res.body.turn.id as string;
  }

  const get = (b: PageBrowser, path: string) => t.http().get(path).set('Cookie', b.cookie);
  const turnRow = async (id: string) =>
    (await t.db.query(`SELECT status, body, message_id, decided_by FROM agent_turns WHERE id = $1`, [id]))[0] as {
      status: string;
      body: string;
      message_id: string | null;
      decided_by: string | null;
    };
  const sentEvents = async (turnId: string) =>
    Number((await t.db.query(`SELECT count(*)::int AS n FROM outbox_events WHERE type = 'agent_turn.sent' AND data->'agentTurn'->>'id' = $1`, [turnId]))[0].n);
  const messagesWith = async (body: string) => Number((await t.db.query(`SELECT count(*)::int AS n FROM messages WHERE body = $1`, [body]))[0].n);
  const carrierGot = (body: string) => waitUntil(() => t.carried.find((c) => c.body === body), `the carrier to receive "${body}"`);

  it('lists the drafts oldest first with their thread (partner, line, last messages), escaped, and a link to the conversation', async () => {
    const o = await org('Hi <script>alert("in")</script> & bye');
    const first = await draft(o, 'First <script>alert("draft")</script>');
    const second = await draft(o, 'Second draft');
    const page = await get(o.browser, '/approvals').expect(200);
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(page.text).toContain('<a href="/approvals" aria-current="page">Approvals</a>');
    expect(page.text.indexOf(first)).toBeGreaterThan(0);
    expect(page.text.indexOf(first)).toBeLessThan(page.text.indexOf(second)); // oldest first
    expect(page.text).toContain(o.partner);
    expect(page.text).toContain(o.phone.address);
    expect(page.text).toContain('drafted by Front desk');
    expect(page.text).toContain('Hi &lt;script>alert(&quot;in&quot;)&lt;/script> &amp; bye');
    expect(page.text).toContain('First &lt;script>alert(&quot;draft&quot;)&lt;/script>');
    expect(page.text).not.toMatch(/<script>alert/);
    expect(page.text).toContain(`href="/conversations/${o.threadId}"`);
    for (const id of [first, second]) {
      expect(page.text).toContain(`action="/approvals/${id}/approve"`);
      expect(page.text).toContain(`action="/approvals/${id}/reject"`);
      expect(page.text).toContain(`<label for="reason-${id}">Reason (optional)</label>`);
      expect(page.text).toContain(`href="/approvals/${id}/edit"`);
    }
    expect(page.text).toContain(`name="_csrf" value="${o.browser.csrf}"`);
  });

  it('Approve sends the draft once, raises agent_turn.sent, and lands on the list with a notice', async () => {
    const o = await org();
    const body = `Yes, 7pm works (${randomUUID()})`;
    const id = await draft(o, body);
    const res = await postForm(t, o.browser, `/approvals/${id}/approve`).expect(303);
    expect(res.headers.location).toBe('/approvals?done=approved');
    expect(await carrierGot(body)).toMatchObject({ from: o.phone.address, to: o.partner });
    expect(await turnRow(id)).toMatchObject({ status: 'SENT', body, decided_by: o.owner.userId, message_id: expect.any(String) });
    expect(await sentEvents(id)).toBe(1);
    const list = await get(o.browser, '/approvals?done=approved').expect(200);
    expect(list.text).toContain('The reply was approved and is on its way.');
    expect(list.text).not.toContain(id);
    expect(list.text).toContain('No drafts are waiting for approval.');
  });

  it('Edit and approve sends the edited body (line breaks as typed), and the draft is not sent', async () => {
    const o = await org();
    const original = `Draft as written ${randomUUID()}`;
    const edited = `Edited: see you at 8pm.\nThanks! ${randomUUID()}`;
    const id = await draft(o, original);
    const form = await get(o.browser, `/approvals/${id}/edit`).expect(200);
    expect(form.text).toContain('<label for="body">Reply to send</label>');
    expect(form.text).toContain(`>\n${original}</textarea>`);
    const res = await postForm(t, o.browser, `/approvals/${id}/edit`, { body: edited.replace('\n', '\r\n') }).expect(303);
    expect(res.headers.location).toBe('/approvals?done=edited');
    expect(await carrierGot(edited)).toMatchObject({ to: o.partner });
    expect(await turnRow(id)).toMatchObject({ status: 'SENT', body: edited });
    expect(await sentEvents(id)).toBe(1);
    expect(await messagesWith(original)).toBe(0);
  });

  it('an empty or too long edited body: the form again with the error next to the field, nothing sent', async () => {
    const o = await org();
    const id = await draft(o, 'Original draft');
    const blank = await postForm(t, o.browser, `/approvals/${id}/edit`, { body: '  \r\n ' }).expect(400);
    expect(blank.text).toContain('<p class="field-error" id="body-error">body must not be blank</p>');
    expect(blank.text).toContain('aria-invalid="true"');
    const long = 'x'.repeat(1601);
    const tooLong = await postForm(t, o.browser, `/approvals/${id}/edit`, { body: long }).expect(400);
    expect(tooLong.text).toContain('body must be at most 1600 characters on an SMS thread');
    expect(tooLong.text).toContain(`>\n${long}</textarea>`); // what was typed, to fix
    expect(await turnRow(id)).toMatchObject({ status: 'AWAITING_APPROVAL', body: 'Original draft', message_id: null });
    expect(await sentEvents(id)).toBe(0);
    // Characters, not UTF-16 units: 1,601 emoji are too many, 1,600 are sent.
    const emoji = await postForm(t, o.browser, `/approvals/${id}/edit`, { body: '🎉'.repeat(1601) }).expect(400);
    expect(emoji.text).toContain('body must be at most 1600 characters on an SMS thread');
    await postForm(t, o.browser, `/approvals/${id}/edit`, { body: '🎉'.repeat(1600) }).expect(303);
    expect(await carrierGot('🎉'.repeat(1600))).toMatchObject({ to: o.partner });
  });

  it("the longest email reply in characters reaches the reply rule, not a 413: up to 100,000 emoji are the form's to send", async () => {
    const owner = await createSession(t.admin, { lines: ['EMAIL_ACCOUNT'] });
    const agentId = (await t.admin.post(`/admin/lines/${owner.lines[0].id}/agents`, { name: 'Mail desk', mode: 'DRAFT' }).expect(201)).body.id as string;
    const sent = await toolOk(t, owner.apiKey, 'send_email', { to: `guest.${randomUUID().slice(0, 8)}@example.com`, subject: 'Menu', body: 'Hello' });
    const turn = await t
      .http()
      .post(`/api/agents/${agentId}/turns`)
      .set('Authorization', `Bearer ${owner.apiKey}`)
      .send({ threadId: sent.message.threadId, body: 'Draft' })
      .expect(201);
    const browser = await signInBrowser(t, owner.userId);
    // 100,001 emoji: 1.2 MB percent-encoded, each 4 UTF-8 bytes written as 12.
    const over = await postForm(t, browser, `/approvals/${turn.body.turn.id}/edit`, { body: '🎉'.repeat(100_001) }).expect(400);
    expect(over.text).toContain('body must be at most 100000 characters on an email thread');
    expect(await turnRow(turn.body.turn.id)).toMatchObject({ status: 'AWAITING_APPROVAL', body: 'Draft' });
    await postForm(t, browser, `/approvals/${turn.body.turn.id}/edit`, { body: '🎉'.repeat(100_000) }).expect(303);
    const [message] = await t.db.query(`SELECT char_length(body) AS n FROM messages WHERE thread_id = $1 AND body LIKE '🎉%'`, [sent.message.threadId]);
    expect(message).toEqual({ n: 100_000 });
  });

  it('Reject sends nothing; a second decision is a 409 page saying who decided first, and sends nothing again', async () => {
    const o = await org();
    const body = `We are closed on Mondays ${randomUUID()}`;
    const id = await draft(o, body);
    const res = await postForm(t, o.browser, `/approvals/${id}/reject`, { reason: '  Not on Mondays  ' }).expect(303);
    expect(res.headers.location).toBe('/approvals?done=rejected');
    expect(await turnRow(id)).toMatchObject({ status: 'REJECTED', message_id: null });
    // The Reason field's text is kept (trimmed) and shown by get_agent_turn.
    const [{ rejection_reason }] = await t.db.query(`SELECT rejection_reason FROM agent_turns WHERE id = $1`, [id]);
    expect(rejection_reason).toBe('Not on Mondays');

    const again = await postForm(t, o.browser, `/approvals/${id}/approve`).expect(409);
    expect(again.text).toContain('This draft was already rejected by you');
    expect(again.text).toContain('nothing was sent.');
    expect(again.text).toContain('<a href="/approvals">Back to approvals</a>');
    await postForm(t, o.browser, `/approvals/${id}/edit`, { body: 'Sneaky edit' }).expect(409);
    const edit = await get(o.browser, `/approvals/${id}/edit`).expect(409);
    expect(edit.text).toContain('Your edited reply was not sent.');

    // A later approval reaches the carrier; by then the rejected draft would have too.
    const later = `Sentinel ${randomUUID()}`;
    await postForm(t, o.browser, `/approvals/${await draft(o, later)}/approve`).expect(303);
    await carrierGot(later);
    expect(t.carried.map((c) => c.body)).not.toContain(body);
    expect(await messagesWith(body)).toBe(0);
    expect(await messagesWith('Sneaky edit')).toBe(0);
    expect(await sentEvents(id)).toBe(0);
  });

  it('two approvals at once (a double submit): one is sent, the other is a 409 page; one message, one event', async () => {
    const o = await org();
    const body = `Double click ${randomUUID()}`;
    const id = await draft(o, body);
    const answers = await Promise.all([
      postForm(t, o.browser, `/approvals/${id}/approve`),
      postForm(t, o.browser, `/approvals/${id}/edit`, { body: `${body} (edited)` }),
    ]);
    expect(answers.map((r) => r.status).sort()).toEqual([303, 409]);
    const refused = answers.find((r) => r.status === 409)!;
    expect(refused.text).toMatch(/This draft was already approved by you at <time[^>]*>[^<]+<\/time>: the reply below was sent once\./);
    const sent = (await turnRow(id)).body;
    await carrierGot(sent);
    expect((await messagesWith(body)) + (await messagesWith(`${body} (edited)`))).toBe(1);
    expect(await sentEvents(id)).toBe(1);
    expect(t.carried.filter((c) => c.body.startsWith(body))).toHaveLength(1);
  });

  it('when another person (through an agent key) approved first, the page names them and nothing is sent again', async () => {
    const o = await org();
    const colleague = await createSession(t.admin, { orgId: o.owner.orgId, role: 'ADMIN', lines: [] });
    await t.admin.put(`/admin/lines/${o.phone.id}/members/${colleague.userId}`).expect(200);
    const body = `Approved elsewhere ${randomUUID()}`;
    const id = await draft(o, body);
    await t.http().post(`/api/agent-turns/${id}/approve`).set('Authorization', `Bearer ${colleague.apiKey}`).send().expect(200);
    const res = await postForm(t, o.browser, `/approvals/${id}/reject`).expect(409);
    expect(res.text).toContain(`This draft was already approved by Test User (${colleague.email})`);
    expect(res.text).toContain('Your rejection changed nothing.');
    expect(res.text).toContain(`href="/conversations/${o.threadId}"`);
    await carrierGot(body);
    expect(await messagesWith(body)).toBe(1);
    expect(await turnRow(id)).toMatchObject({ status: 'SENT', decided_by: colleague.userId });
  });

  it("a MEMBER never sees or decides another line's draft (list, edit page, direct POSTs: 404); a deleted line fails closed", async () => {
    const o = await org();
    const body = `Owner line only ${randomUUID()}`;
    const id = await draft(o, body);
    const member = await createSession(t.admin, { orgId: o.owner.orgId, role: 'MEMBER', lines: ['PHONE_NUMBER'] });
    const mb = await signInBrowser(t, member.userId);
    const list = await get(mb, '/approvals').expect(200);
    expect(list.text).not.toContain(id);
    expect(list.text).not.toContain(body);
    expect(list.text).toContain('No drafts are waiting for approval.');
    const edit = await get(mb, `/approvals/${id}/edit`).expect(404);
    expect(edit.text).toContain(`Agent turn ${id} not found`);
    expect(edit.text).not.toContain(body);
    await postForm(t, mb, `/approvals/${id}/approve`).expect(404);
    await postForm(t, mb, `/approvals/${id}/edit`, { body: 'hijack' }).expect(404);
    await postForm(t, mb, `/approvals/${id}/reject`).expect(404);
    expect(await turnRow(id)).toMatchObject({ status: 'AWAITING_APPROVAL', message_id: null });

    // A malformed id is a 400 page; a form without the CSRF token is refused.
    await postForm(t, o.browser, '/approvals/not-a-uuid/approve').expect(400);
    await t.http().post(`/approvals/${id}/approve`).set('Cookie', o.browser.cookie).set('Origin', 'http://127.0.0.1:3000').type('form').send({}).expect(403);

    // The owner's line deleted: its drafts leave the page and cannot be approved.
    await t.admin.delete(`/admin/lines/${o.phone.id}`).expect(204);
    const after = await get(o.browser, '/approvals').expect(200);
    expect(after.text).not.toContain(id);
    await postForm(t, o.browser, `/approvals/${id}/approve`).expect(404);
    expect(await turnRow(id)).toMatchObject({ status: 'AWAITING_APPROVAL' });
  });

  it("a thread's drafts show on its page with the three actions; deciding there returns to the thread", async () => {
    const o = await org();
    const approved = `From the thread: see you at 7 (${randomUUID()})`;
    const edited = `Edited on the thread page (${randomUUID()})`;
    const first = await draft(o, approved);
    const second = await draft(o, `Will be edited ${randomUUID()}`);
    const third = await draft(o, `Will be rejected <script>alert(1)</script> ${randomUUID()}`);
    const path = `/conversations/${o.threadId}`;
    const page = (await get(o.browser, path).expect(200)).text;
    expect(page).toContain('<h2 id="drafts-heading">Waiting for your approval</h2>');
    expect(page).toContain('Drafted by Front desk');
    expect(page).toContain('Will be rejected &lt;script>alert(1)&lt;/script>');
    expect(page).not.toContain('<script>alert');
    // oldest first, inside the live region, each with Approvals' forms saying where to return
    expect(page.indexOf(approved)).toBeLessThan(page.indexOf(`action="/approvals/${second}/approve"`));
    expect(page.indexOf('id="live-messages"')).toBeLessThan(page.indexOf('drafts-heading'));
    for (const id of [first, second, third]) {
      expect(page).toMatch(
        new RegExp(`action="/approvals/${id}/approve"><input type="hidden" name="_csrf" value="[^"]+"/><input type="hidden" name="back" value="thread"/>`),
      );
      expect(page).toContain(`href="/approvals/${id}/edit?back=thread"`);
    }

    const approve = await postForm(t, o.browser, `/approvals/${first}/approve`, { back: 'thread' }).expect(303);
    expect(approve.headers.location).toBe(`${path}?done=approved`);
    expect(await carrierGot(approved)).toMatchObject({ to: o.partner });
    expect((await get(o.browser, `${path}?done=approved`).expect(200)).text).toContain('The reply was approved and is on its way.');

    const form = (await get(o.browser, `/approvals/${second}/edit?back=thread`).expect(200)).text;
    expect(form).toContain('<input type="hidden" name="back" value="thread"/>');
    expect(form).toContain(`<a href="${path}">Cancel</a>`);
    const blank = await postForm(t, o.browser, `/approvals/${second}/edit`, { body: ' ', back: 'thread' }).expect(400);
    expect(blank.text).toContain('<input type="hidden" name="back" value="thread"/>');
    const edit = await postForm(t, o.browser, `/approvals/${second}/edit`, { body: edited, back: 'thread' }).expect(303);
    expect(edit.headers.location).toBe(`${path}?done=edited`);
    expect(await carrierGot(edited)).toMatchObject({ to: o.partner });

    // `back` names a place, never a URL: anything else returns to Approvals
    const reject = await postForm(t, o.browser, `/approvals/${third}/reject`, { back: 'https://evil.example/' }).expect(303);
    expect(reject.headers.location).toBe('/approvals?done=rejected');
    expect(await turnRow(third)).toMatchObject({ status: 'REJECTED', message_id: null });

    const after = (await get(o.browser, path).expect(200)).text;
    expect(after).not.toContain('drafts-heading');
    expect(after).not.toContain('Awaiting approval');
  });

  it('pages of ten, oldest first: Newer drafts carries on where the page ended', async () => {
    const o = await org();
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push(await draft(o, `Draft number ${i} ${randomUUID()}`));
    const first = await get(o.browser, '/approvals').expect(200);
    const shown = (text: string) => ids.filter((id) => text.includes(`/approvals/${id}/approve`));
    expect(shown(first.text)).toEqual(ids.slice(0, 10));
    const next = /href="(\/approvals\?cursor=[^"]+)">Newer drafts<\/a>/.exec(first.text)![1].replace(/&amp;/g, '&');
    const second = await get(o.browser, next).expect(200);
    expect(shown(second.text)).toEqual(ids.slice(10));
    expect(second.text).not.toContain('Newer drafts');
    expect(second.text).toContain('<a href="/approvals">Oldest drafts</a>');
    await get(o.browser, '/approvals?cursor=forged.cursor').expect(400);
  });
});
