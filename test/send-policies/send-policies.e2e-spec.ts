import { randomUUID } from 'node:crypto';
import { callTool } from '../support/mcp';
import { modernRpc } from '../support/mcp-modern';
import { createMessagingTestApp, inboundSms, MessagingTestApp, partnerPhone } from '../support/messaging-hooks';
import { connectApp } from '../support/oauth';
import { createSession, Session } from '../support/session';
import { postForm, signInBrowser } from '../support/web';
import { LIMIT_SLOTS, SendPoliciesRepository } from '../../src/send-policies/send-policies.repository';
import { SendPoliciesService } from '../../src/send-policies/send-policies.service';

type Era = 'classic' | 'modern';

/** What a send through MCP answered: the message, or the tool error's text. */
interface Sent {
  ok: boolean;
  text: string;
  message?: { id: string; threadId: string };
}

/**
 * Send policies (docs/send-policies.md): each rule refuses a credential's send, naming itself and,
 * for a rule of time, when it passes; and passes once its window opens. Windows are opened by moving
 * the counted messages' created_at back, or by editing the policy, never by waiting.
 */
describe('send policies: per org, per credential overrides, refused alike on MCP (both eras) and REST', () => {
  let m: MessagingTestApp;

  beforeAll(async () => {
    m = await createMessagingTestApp();
  });
  afterAll(async () => {
    await m?.close();
  });

  async function org(): Promise<Session> {
    return createSession(m.admin, { lines: ['PHONE_NUMBER'] });
  }

  async function setPolicy(s: Session, policy: Record<string, unknown>): Promise<void> {
    const res = await m.admin.put(`/admin/orgs/${s.orgId}/send-policy`, policy);
    expect(res.status).toBe(200);
  }

  async function send(era: Era, key: string, to: string, body = 'hello'): Promise<Sent> {
    const args = { to, body };
    const result =
      era === 'classic'
        ? await callTool(m, key, 'send_sms', args)
        : (await modernRpc(m, key, 'tools/call', { name: 'send_sms', arguments: args }).expect(200)).body.result;
    if (result.isError) return { ok: false, text: result.content[0].text };
    return { ok: true, text: result.content[0].text, message: result.structuredContent.message };
  }

  /** Moves the credential's sent messages back in time by `ms`: as if that time had passed. */
  async function age(keyId: string, ms: number): Promise<void> {
    await m.db.query(`UPDATE messages SET created_at = created_at - make_interval(secs => $2) WHERE sent_by_key_id = $1`, [keyId, ms / 1000]);
  }

  async function outboundTo(to: string): Promise<number> {
    const [{ count }] = await m.db.query(`SELECT count(*)::int AS count FROM messages WHERE to_value = $1 AND direction = 'OUTBOUND'`, [to]);
    return count;
  }

  const passesAtIn = (text: string): Date => new Date(/(\d{4}-\d{2}-\d{2}T[\d:.]+Z)/.exec(text)![1]);

  describe.each<Era>(['classic', 'modern'])('through MCP (%s era)', (era) => {
    it('max_per_hour: refuses the send over the limit until the oldest counted send is an hour old', async () => {
      const s = await org();
      await setPolicy(s, { maxPerHour: 2 });
      expect((await send(era, s.apiKey, partnerPhone())).ok).toBe(true);
      expect((await send(era, s.apiKey, partnerPhone())).ok).toBe(true);
      const to = partnerPhone();
      const refused = await send(era, s.apiKey, to);
      expect(refused.ok).toBe(false);
      expect(refused.text).toMatch(/^this credential has sent its 2 messages in the last hour; the next may go at .+ \(rule max_per_hour\)$/);
      const [oldest] = await m.db.query(`SELECT min(created_at) AS at FROM messages WHERE sent_by_key_id = $1`, [s.apiKeyId]);
      expect(passesAtIn(refused.text).getTime()).toBe(new Date(oldest.at).getTime() + 3600_000);
      expect(await outboundTo(to)).toBe(0);
      await age(s.apiKeyId, 3601_000);
      expect((await send(era, s.apiKey, to)).ok).toBe(true);
    });

    it('max_per_day: refuses the send over the limit until a counted send is a day old', async () => {
      const s = await org();
      await setPolicy(s, { maxPerDay: 1 });
      expect((await send(era, s.apiKey, partnerPhone())).ok).toBe(true);
      await age(s.apiKeyId, 2 * 3600_000); // out of the hour, still in the day
      const refused = await send(era, s.apiKey, partnerPhone());
      expect(refused.text).toMatch(/in the last 24 hours; the next may go at .+ \(rule max_per_day\)$/);
      await age(s.apiKeyId, 22 * 3600_000 + 1000);
      expect((await send(era, s.apiKey, partnerPhone())).ok).toBe(true);
    });

    it('max_per_hour and max_per_day together (one walk of the day, newest first): each counts its own window', async () => {
      const s = await org();
      await setPolicy(s, { maxPerHour: 3, maxPerDay: 4 });
      for (let i = 0; i < 3; i += 1) expect((await send(era, s.apiKey, partnerPhone())).ok).toBe(true);
      await age(s.apiKeyId, 2 * 3600_000); // three out of the hour, still in the day
      expect((await send(era, s.apiKey, partnerPhone())).ok).toBe(true);
      // The hour holds one (room for another), the day four: the day refuses.
      expect((await send(era, s.apiKey, partnerPhone())).text).toMatch(/its 4 messages in the last 24 hours; .+ \(rule max_per_day\)$/);
      await setPolicy(s, { maxPerHour: 1, maxPerDay: 10 });
      // Now the hour's one is its limit: the hour refuses, though the day (larger cap) has room.
      expect((await send(era, s.apiKey, partnerPhone())).text).toMatch(/its 1 message in the last hour; .+ \(rule max_per_hour\)$/);
    });

    it('max_per_recipient_per_day: refuses another send to the same recipient only', async () => {
      const s = await org();
      await setPolicy(s, { maxPerRecipientPerDay: 1 });
      const to = partnerPhone();
      expect((await send(era, s.apiKey, to)).ok).toBe(true);
      expect((await send(era, s.apiKey, to)).text).toMatch(/to this recipient in the last 24 hours; the next may go at .+ \(rule max_per_recipient_per_day\)$/);
      expect((await send(era, s.apiKey, partnerPhone())).ok).toBe(true);
      await age(s.apiKeyId, 86_401_000);
      expect((await send(era, s.apiKey, to)).ok).toBe(true);
    });

    it('quiet_hours: refuses during the window (passes when it ends, sendAt suggested), sends once it is over', async () => {
      const s = await org();
      const hhmm = (d: Date) => d.toISOString().slice(11, 16);
      const now = Date.now();
      await setPolicy(s, { quietStart: hhmm(new Date(now - 3600_000)), quietEnd: hhmm(new Date(now + 3600_000)), timeZone: 'UTC' });
      const to = partnerPhone();
      const refused = await send(era, s.apiKey, to);
      expect(refused.text).toMatch(
        /^quiet hours \(\d\d:\d\d to \d\d:\d\d, UTC\): nothing is sent until .+; to have it go then, send again with sendAt \(rule quiet_hours\)$/,
      );
      const passesAt = passesAtIn(refused.text).getTime();
      expect(passesAt).toBeGreaterThan(now + 3540_000);
      expect(passesAt).toBeLessThanOrEqual(now + 3600_000);
      expect(await outboundTo(to)).toBe(0);
      // The window moves to end a minute ago: it is over.
      await setPolicy(s, { quietStart: hhmm(new Date(now - 7200_000)), quietEnd: hhmm(new Date(now - 60_000)), timeZone: 'UTC' });
      expect((await send(era, s.apiKey, to)).ok).toBe(true);
    });

    it('deny_list: refuses a denied prefix (deny wins over allow) until the entry is removed', async () => {
      const s = await org();
      const to = partnerPhone();
      await setPolicy(s, { allowList: ['+1666'], denyList: [to.slice(0, 8)] });
      expect((await send(era, s.apiKey, to)).text).toBe(`${to} matches "${to.slice(0, 8)}" on this credential's deny list, so it is not sent (rule deny_list)`);
      await setPolicy(s, { allowList: ['+1666'], denyList: [] });
      expect((await send(era, s.apiKey, to)).ok).toBe(true);
    });

    it('allow_list: a non-empty allow list admits only its entries', async () => {
      const s = await org();
      const to = partnerPhone();
      await setPolicy(s, { allowList: ['+1999', 'example.com'] });
      expect((await send(era, s.apiKey, to)).text).toBe(`${to} is not on this credential's allow list (2 entries), so it is not sent (rule allow_list)`);
      await setPolicy(s, { allowList: ['+1999', '+1666'] });
      expect((await send(era, s.apiKey, to)).ok).toBe(true);
    });

    it('replies_only: refuses a recipient who has not written to the line, until they do', async () => {
      const s = await org();
      await setPolicy(s, { repliesOnly: true });
      const to = partnerPhone();
      expect((await send(era, s.apiKey, to)).text).toBe(
        `${to} has not written to this line: this credential may only answer people who wrote first, so it is not sent (rule replies_only)`,
      );
      await inboundSms(m, s.lines[0].address, to, 'hi, it is me');
      expect((await send(era, s.apiKey, to)).ok).toBe(true);
    });
  });

  it('max_per_hour holds under concurrency: 3x the limit sent at once (each its own HTTP call) writes exactly the limit', async () => {
    const s = await org();
    await setPolicy(s, { maxPerHour: 10 });
    const results = await Promise.all(Array.from({ length: 30 }, () => send('classic', s.apiKey, partnerPhone())));
    expect(results.filter((r) => r.ok).length).toBe(10);
    expect(results.filter((r) => !r.ok).every((r) => /\(rule max_per_hour\)$/.test(r.text))).toBe(true);
    const [{ count }] = await m.db.query(`SELECT count(*)::int AS count FROM messages WHERE sent_by_key_id = $1`, [s.apiKeyId]);
    expect(count).toBe(10);
  });

  it('a limit above LIMIT_SLOTS holds under concurrency too: sends far from it pass holding one slot each, those near it wait for every slot', async () => {
    const s = await org();
    const limit = LIMIT_SLOTS + 4;
    await setPolicy(s, { maxPerHour: limit });
    const results = await Promise.all(Array.from({ length: limit + limit / 2 }, () => send('classic', s.apiKey, partnerPhone())));
    expect(results.filter((r) => r.ok).length).toBe(limit);
    expect(results.filter((r) => !r.ok).every((r) => /\(rule max_per_hour\)$/.test(r.text))).toBe(true);
    const [{ count }] = await m.db.query(`SELECT count(*)::int AS count FROM messages WHERE sent_by_key_id = $1`, [s.apiKeyId]);
    expect(count).toBe(limit);
  });

  it('a slot is kept only with room under every limit, and given back otherwise: the send holds no advisory lock of the credential then', async () => {
    const s = await org();
    const repository = m.app.get(SendPoliciesRepository);
    const hourAgo = new Date(Date.now() - 3600_000);
    const dayAgo = new Date(Date.now() - 86_400_000);
    const none: { perHour: number | null; perDay: number | null; toRecipientPerDay: number | null } = { perHour: null, perDay: null, toRecipientPerDay: null };
    const runner = m.db.createQueryRunner();
    const other = m.db.createQueryRunner();
    const heldBy = async (pid: number): Promise<number> => {
      const [{ held }] = await m.db.query(`SELECT count(*)::int AS held FROM pg_locks WHERE locktype = 'advisory' AND pid = $1`, [pid]);
      return held;
    };
    try {
      await runner.startTransaction();
      const [{ pid }] = await runner.query(`SELECT pg_backend_pid() AS pid`);
      const tryOne = (max: typeof none) => repository.tryOneSlotWithRoom(runner.manager, s.apiKeyId, partnerPhone(), hourAgo, dayAgo, max, null);
      // Room under every limit: one slot kept.
      expect(await tryOne({ ...none, perDay: LIMIT_SLOTS + 1000 })).toBe(true);
      expect(await heldBy(pid)).toBe(1);
      // A limit below LIMIT_SLOTS never leaves room for them all: the slot taken is given back, the one before stays.
      expect(await tryOne({ ...none, perHour: LIMIT_SLOTS - 1 })).toBe(false);
      expect(await tryOne({ ...none, toRecipientPerDay: 1 })).toBe(false);
      expect(await heldBy(pid)).toBe(1);
      await runner.rollbackTransaction();
      expect(await heldBy(pid)).toBe(0);
      // No slot free (another transaction holds them all): none taken, none waited for.
      await other.startTransaction();
      await repository.lockAllSlots(other.manager, s.apiKeyId);
      await runner.startTransaction();
      expect(await tryOne({ ...none, perDay: LIMIT_SLOTS + 1000 })).toBe(false);
      expect(await heldBy(pid)).toBe(0);
    } finally {
      if (runner.isTransactionActive) await runner.rollbackTransaction();
      if (other.isTransactionActive) await other.rollbackTransaction();
      await runner.release();
      await other.release();
    }
  });

  it('the hour and day limits read per-hour counts (send_counts): every counted send is in them; over the exact count, the exact count decides', async () => {
    const s = await org();
    const counted = async (): Promise<number> => {
      const [{ sends }] = await m.db.query(`SELECT COALESCE(sum(sends), 0)::int AS sends FROM send_counts WHERE credential_id = $1`, [s.apiKeyId]);
      return sends;
    };
    const limit = LIMIT_SLOTS + 8;
    await setPolicy(s, { maxPerHour: limit, maxPerDay: limit });
    for (let i = 0; i < 3; i += 1) expect((await send('classic', s.apiKey, partnerPhone())).ok).toBe(true);
    expect(await counted()).toBe(3);
    // A scheduled send is counted when it leaves SCHEDULED (released, or cancelled: the limits count both), not before.
    const scheduled = await callTool(m, s.apiKey, 'send_sms', { to: partnerPhone(), body: 'later', sendAt: new Date(Date.now() + 3600_000).toISOString() });
    const scheduledId = (scheduled.structuredContent as { message: { id: string } }).message.id;
    expect(await counted()).toBe(3);
    await m.db.query(`UPDATE messages SET status = 'CANCELED' WHERE id = $1`, [scheduledId]);
    expect(await counted()).toBe(4);
    // Counts above the messages (as after a thread's deletion): a send near the limit by them is
    // counted exactly, and passes up to the limit of messages, not of counts.
    await m.db.query(`INSERT INTO send_counts (credential_id, hour, backend, sends) VALUES ($1, floor(extract(epoch FROM now()) / 3600)::int, 0, 1000)`, [
      s.apiKeyId,
    ]);
    for (let i = 4; i < limit; i += 1) expect((await send('classic', s.apiKey, partnerPhone())).ok).toBe(true);
    expect((await send('classic', s.apiKey, partnerPhone())).text).toMatch(/its \d+ messages in the last (hour|24 hours); .+ \(rule max_per_(hour|day)\)$/);
    const [{ count }] = await m.db.query(`SELECT count(*)::int AS count FROM messages WHERE sent_by_key_id = $1 AND status <> 'SCHEDULED'`, [s.apiKeyId]);
    expect(count).toBe(limit);
    // Hours no window reaches any more are deleted by the outbound sweep.
    await m.db.query(`INSERT INTO send_counts (credential_id, hour, backend, sends) VALUES ($1, floor(extract(epoch FROM now()) / 3600)::int - 26, 0, 5)`, [
      s.apiKeyId,
    ]);
    expect(await m.app.get(SendPoliciesService).pruneCounts()).toBeGreaterThanOrEqual(1);
    expect(await counted()).toBe(limit + 1000);
  });

  it("quiet_hours and sendAt: a send scheduled for the window's end is SCHEDULED; one scheduled inside the window is refused at once", async () => {
    const s = await org();
    const hhmm = (d: Date) => d.toISOString().slice(11, 16);
    const now = Date.now();
    await setPolicy(s, { quietStart: hhmm(new Date(now - 3600_000)), quietEnd: hhmm(new Date(now + 3600_000)), timeZone: 'UTC', maxPerHour: 1 });
    const to = partnerPhone();
    const refused = await callTool(m, s.apiKey, 'send_sms', { to, body: 'now?' });
    expect(refused.isError).toBe(true);
    const end = passesAtIn(refused.content[0].text);
    const scheduled = await callTool(m, s.apiKey, 'send_sms', { to, body: 'at the opening', sendAt: end.toISOString() });
    expect(scheduled.isError).toBeFalsy();
    expect((scheduled.structuredContent as { message: { status: string } }).message.status).toBe('SCHEDULED');
    // The limits bind when it is released, not when it is scheduled: a second one is scheduled too.
    const second = await callTool(m, s.apiKey, 'send_sms', { to, body: 'also then', sendAt: new Date(end.getTime() + 60_000).toISOString() });
    expect((second.structuredContent as { message: { status: string } }).message.status).toBe('SCHEDULED');
    const inside = await callTool(m, s.apiKey, 'send_sms', { to, body: 'in the night', sendAt: new Date(now + 1800_000).toISOString() });
    expect(inside.isError).toBe(true);
    expect(inside.content[0].text).toMatch(/\(rule quiet_hours\)$/);
    expect(passesAtIn(inside.content[0].text).getTime()).toBe(end.getTime());
    const [{ count }] = await m.db.query(`SELECT count(*)::int AS count FROM messages WHERE sent_by_key_id = $1`, [s.apiKeyId]);
    expect(count).toBe(2);
  });

  it('a limit lowered below what was sent: the refusal (counting at most max + 1 rows) names when enough sends leave the window', async () => {
    const s = await org();
    for (let i = 0; i < 5; i++) expect((await send('classic', s.apiKey, partnerPhone())).ok).toBe(true);
    await setPolicy(s, { maxPerHour: 2 });
    const refused = await send('classic', s.apiKey, partnerPhone());
    expect(refused.text).toMatch(/sent its 2 messages in the last hour; the next may go at .+ \(rule max_per_hour\)$/);
    // 5 counted, 2 allowed: the 4th oldest (the 2nd newest) must leave the hour.
    const sent = await m.db.query(`SELECT created_at FROM messages WHERE sent_by_key_id = $1 ORDER BY created_at`, [s.apiKeyId]);
    expect(passesAtIn(refused.text).getTime()).toBe(new Date(sent[3].created_at).getTime() + 3600_000);
  });

  it("a credential's override beats the org policy field by field (null inherits); removing it restores the org's", async () => {
    const s = await org();
    const other = (await m.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'other key', channelAccess: { mode: 'ALL' } }).expect(201)).body;
    await setPolicy(s, { maxPerHour: 1, denyList: ['+1777'] });
    const put = await m.admin.put(`/admin/orgs/${s.orgId}/send-policy/credentials/${s.apiKeyId}`, { maxPerHour: 3 });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({
      credential: { id: s.apiKeyId, kind: 'API_KEY', name: 'test key', ownerEmail: s.email },
      override: { maxPerHour: 3, denyList: null },
      effective: { maxPerHour: 3, denyList: ['+1777'] },
    });
    for (let i = 0; i < 3; i++) expect((await send('classic', s.apiKey, partnerPhone())).ok).toBe(true);
    expect((await send('classic', s.apiKey, partnerPhone())).text).toMatch(/\(rule max_per_hour\)$/);
    expect((await send('classic', s.apiKey, '+17775550100')).text).toMatch(/\(rule deny_list\)$/);
    // The other key is held to the org's 1 per hour.
    expect((await send('modern', other.key, partnerPhone())).ok).toBe(true);
    expect((await send('modern', other.key, partnerPhone())).text).toMatch(/sent its 1 message in the last hour.*\(rule max_per_hour\)$/);

    await m.admin.delete(`/admin/orgs/${s.orgId}/send-policy/credentials/${s.apiKeyId}`).expect(204);
    await m.admin.delete(`/admin/orgs/${s.orgId}/send-policy/credentials/${s.apiKeyId}`).expect(404);
    expect((await m.admin.get(`/admin/orgs/${s.orgId}/send-policy/credentials/${s.apiKeyId}`).expect(200)).body).toMatchObject({
      override: null,
      effective: { maxPerHour: 1 },
    });
  });

  it("an OAuth grant (a connected app) is a credential too: its override binds its sends, counted by the grant's id", async () => {
    const s = await org();
    const browser = await signInBrowser(m, s.userId);
    const app = await connectApp(m, browser, {
      clientName: 'Policy Agent',
      choice: { access: 'ALL', 'permissions-shown': 'on', 'permission-read': 'on', 'permission-send': 'on' },
    });
    const [grant] = await m.db.query(`SELECT id FROM oauth_grants WHERE client_id = $1`, [app.clientId]);
    const put = await m.admin.put(`/admin/orgs/${s.orgId}/send-policy/credentials/${grant.id}`, { maxPerHour: 1 }).expect(200);
    expect(put.body.credential).toEqual({ id: grant.id, kind: 'OAUTH_GRANT', name: 'Policy Agent', ownerId: s.userId, ownerEmail: s.email });
    for (const era of ['modern', 'classic'] as const) {
      const first = await send(era, app.accessToken, partnerPhone());
      expect(first.ok).toBe(true);
      const [row] = await m.db.query(`SELECT sent_by_key_id FROM messages WHERE id = $1`, [first.message!.id]);
      expect(row.sent_by_key_id).toBe(grant.id);
      expect((await send(era, app.accessToken, partnerPhone())).text).toMatch(/sent its 1 message in the last hour.*\(rule max_per_hour\)$/);
      await age(grant.id, 3601_000);
    }
    // The org's API key has no override and the org no policy: not bound.
    for (let i = 0; i < 3; i++) expect((await send('classic', s.apiKey, partnerPhone())).ok).toBe(true);
  });

  it('the admin API names the bad field, knows only the org’s credentials, and answers the policy', async () => {
    const s = await org();
    const empty = await m.admin.get(`/admin/orgs/${s.orgId}/send-policy`).expect(200);
    expect(empty.body).toMatchObject({ maxPerHour: null, quietStart: null, allowList: null, repliesOnly: null, updatedAt: null });
    const bad = async (body: Record<string, unknown>) => (await m.admin.put(`/admin/orgs/${s.orgId}/send-policy`, body).expect(400)).body;
    expect(await bad({ maxPerHour: -1 })).toMatchObject({ field: 'maxPerHour' });
    expect(await bad({ quietStart: '9pm', quietEnd: '08:00' })).toMatchObject({ field: 'quietStart' });
    expect(await bad({ quietStart: '21:00' })).toMatchObject({ field: 'quietEnd' });
    expect(await bad({ quietStart: '21:00', quietEnd: '08:00', timeZone: 'Mars/Olympus' })).toMatchObject({ field: 'timeZone' });
    expect(await bad({ denyList: ['1415'] })).toMatchObject({ field: 'denyList' });
    expect(await bad({ surprise: true })).toMatchObject({ field: 'surprise' });
    const saved = await m.admin.put(`/admin/orgs/${s.orgId}/send-policy`, {
      quietStart: '21:00',
      quietEnd: '08:00',
      timeZone: 'America/New_York',
      allowList: ['Example.com', '+1415'],
    });
    expect(saved.status).toBe(200);
    expect(saved.body).toMatchObject({
      quietStart: '21:00',
      quietEnd: '08:00',
      timeZone: 'America/New_York',
      allowList: ['example.com', '+1415'],
      maxPerDay: null,
    });
    const stranger = await org();
    await m.admin.put(`/admin/orgs/${s.orgId}/send-policy/credentials/${stranger.apiKeyId}`, { maxPerHour: 1 }).expect(404);
    await m.admin.put(`/admin/orgs/${randomUUID()}/send-policy`, {}).expect(404);
  });

  it('the REST agent turn route answers 429 with Retry-After for a rule of time and 403 for a recipient rule', async () => {
    const s = await org();
    const line = s.lines[0];
    const agent = (await m.admin.post(`/admin/lines/${line.id}/agents`, { name: 'auto bot', mode: 'AUTO' }).expect(201)).body;
    const partner = partnerPhone();
    const { threadId } = await inboundSms(m, line.address, partner, 'table for two?');
    const turn = () => m.http().post(`/api/agents/${agent.id}/turns`).set('Authorization', `Bearer ${s.apiKey}`).send({ threadId, body: 'Yes!' });
    await setPolicy(s, { maxPerHour: 1 });
    expect((await turn()).status).toBe(201);
    const limited = await turn();
    expect(limited.status).toBe(429);
    expect(limited.body).toMatchObject({ statusCode: 429, message: expect.stringMatching(/\(rule max_per_hour\)$/) });
    const retryAfter = Number(limited.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(3500);
    expect(retryAfter).toBeLessThanOrEqual(3600);
    await age(s.apiKeyId, 3601_000);
    expect((await turn()).status).toBe(201);

    await setPolicy(s, { denyList: [partner] });
    const denied = await turn();
    expect(denied.status).toBe(403);
    expect(denied.headers['retry-after']).toBeUndefined();
    expect(denied.body).toMatchObject({ statusCode: 403, field: 'to', message: expect.stringMatching(/\(rule deny_list\)$/) });
  });

  it("a person's own reply on the thread page is not bound by the policy", async () => {
    const s = await org();
    const line = s.lines[0];
    const partner = partnerPhone();
    const { threadId } = await inboundSms(m, line.address, partner, 'hello?');
    await setPolicy(s, { maxPerHour: 0, denyList: ['+1'] });
    expect((await send('classic', s.apiKey, partner)).text).toMatch(/\(rule deny_list\)$/);
    const browser = await signInBrowser(m, s.userId);
    const page = await m.http().get(`/conversations/${threadId}`).set('Cookie', browser.cookie).expect(200);
    const key = /name="idempotencyKey" value="([^"]+)"/.exec(page.text)![1];
    await postForm(m, browser, `/conversations/${threadId}/reply`, { body: 'A person answers', idempotencyKey: key }).expect(303);
    const [row] = await m.db.query(`SELECT sent_by_user_id, sent_by_key_id FROM messages WHERE thread_id = $1 AND direction = 'OUTBOUND'`, [threadId]);
    expect(row).toEqual({ sent_by_user_id: s.userId, sent_by_key_id: null });
  });

  it('Settings → Send policies: the OWNER edits the org policy and an override (errors name the field); a member sees it read-only and may not post', async () => {
    const s = await org();
    const owner = await signInBrowser(m, s.userId);
    const page = (b: { cookie: string }, path = '/settings/send-policies') => m.http().get(path).set('Cookie', b.cookie);
    const shown = await page(owner).expect(200);
    expect(shown.text).toContain('Organization policy');
    expect(shown.text).toContain('test key');

    const bad = await postForm(m, owner, '/settings/send-policies', { maxPerHour: 'ten', quietStart: '', quietEnd: '' }).expect(400);
    expect(bad.text).toMatch(/id="maxPerHour-error">maxPerHour must be a whole number/);
    expect(bad.text).toContain('value="ten"');
    const zone = await postForm(m, owner, '/settings/send-policies', { quietStart: '21:00', quietEnd: '08:00', timeZone: 'Nowhere/Land' }).expect(400);
    expect(zone.text).toMatch(/id="timeZone-error">timeZone must be an IANA time zone/);
    await postForm(m, owner, '/settings/send-policies', {
      maxPerHour: '10',
      quietStart: '21:00',
      quietEnd: '08:00',
      timeZone: 'Europe/Paris',
      denyList: '+1900\nspam.example',
      repliesOnly: 'true',
    })
      .expect(303)
      .expect('Location', '/settings/send-policies?done=saved');
    expect((await m.admin.get(`/admin/orgs/${s.orgId}/send-policy`).expect(200)).body).toMatchObject({
      maxPerHour: 10,
      maxPerDay: null,
      quietStart: '21:00',
      quietEnd: '08:00',
      timeZone: 'Europe/Paris',
      denyList: ['+1900', 'spam.example'],
      allowList: [],
      repliesOnly: true,
    });

    const overridePath = `/settings/send-policies/credentials/${s.apiKeyId}`;
    expect((await page(owner, overridePath).expect(200)).text).toContain("The org's: 10.");
    await postForm(m, owner, overridePath, { maxPerHour: '50', denyMode: 'set', denyList: '', repliesOnly: '' }).expect(303);
    expect((await m.admin.get(`/admin/orgs/${s.orgId}/send-policy/credentials/${s.apiKeyId}`).expect(200)).body).toMatchObject({
      override: { maxPerHour: 50, denyList: [], allowList: null, repliesOnly: null, timeZone: null },
      effective: { maxPerHour: 50, denyList: [], repliesOnly: true, timeZone: 'Europe/Paris' },
    });
    await postForm(m, owner, `${overridePath}/remove`).expect(303).expect('Location', '/settings/send-policies?done=removed');
    await page(owner, '/settings/send-policies/credentials/not-a-key').expect(404);

    const member = await createSession(m.admin, { orgId: s.orgId, role: 'MEMBER', lines: [] });
    const memberBrowser = await signInBrowser(m, member.userId);
    const readOnly = await page(memberBrowser).expect(200);
    expect(readOnly.text).toContain("Only your organization's owner may change them.");
    expect(readOnly.text).not.toContain('Save policy');
    await postForm(m, memberBrowser, '/settings/send-policies', { maxPerHour: '1000' }).expect(403);
    expect((await m.admin.get(`/admin/orgs/${s.orgId}/send-policy`).expect(200)).body.maxPerHour).toBe(10);
  });

  it("a MEMBER sees only their own credentials' overrides: not the org's other keys nor their owners' emails; another's credential page is 404", async () => {
    const s = await org();
    const [owner] = await m.db.query(`SELECT email FROM users WHERE id = $1`, [s.userId]);
    const member = await createSession(m.admin, { orgId: s.orgId, role: 'MEMBER', lines: [] });
    const page = (b: { cookie: string }, path = '/settings/send-policies') => m.http().get(path).set('Cookie', b.cookie);
    const memberBrowser = await signInBrowser(m, member.userId);
    const seen = await page(memberBrowser).expect(200);
    expect(seen.text).toContain(`/settings/send-policies/credentials/${member.apiKeyId}`);
    expect(seen.text).not.toContain(s.apiKeyId);
    expect(seen.text).not.toContain(owner.email);
    await page(memberBrowser, `/settings/send-policies/credentials/${member.apiKeyId}`).expect(200);
    await page(memberBrowser, `/settings/send-policies/credentials/${s.apiKeyId}`).expect(404);
    // The OWNER (and an ADMIN) still see every credential of the org.
    const all = await page(await signInBrowser(m, s.userId)).expect(200);
    expect(all.text).toContain(s.apiKeyId);
    expect(all.text).toContain(member.apiKeyId);
    const admin = await createSession(m.admin, { orgId: s.orgId, role: 'ADMIN', lines: [] });
    await page(await signInBrowser(m, admin.userId), `/settings/send-policies/credentials/${s.apiKeyId}`).expect(200);
  });
});
