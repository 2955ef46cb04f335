import { randomUUID } from 'node:crypto';
import { ISO_MS, toolOk } from '../../support/mcp';
import { createMessagingTestApp, Hook, inboundSms, MessagingTestApp, partnerPhone } from '../../support/messaging-hooks';
import { createSession, Session, SessionLine } from '../../support/session';
import { INGEST_TOKEN } from '../../support/test-env';

describe('mailbox health: POST /ingest/email-accounts/:lineId/sync → email_account.health_changed', () => {
  let m: MessagingTestApp;
  beforeAll(async () => {
    m = await createMessagingTestApp();
  }, 60_000);
  afterAll(async () => {
    await m?.close();
  });

  const mailOf = (s: Session): SessionLine => s.lines.find((l) => l.type === 'EMAIL_ACCOUNT')!;
  const phoneOf = (s: Session): SessionLine => s.lines.find((l) => l.type === 'PHONE_NUMBER')!;
  const sync = (lineId: string, body: object, token = INGEST_TOKEN) =>
    m.http().post(`/ingest/email-accounts/${lineId}/sync`).set('Authorization', `Bearer ${token}`).send(body);

  async function healthEvents(lineId: string): Promise<Array<{ data: any }>> {
    return m.db.query(`SELECT data FROM outbox_events WHERE type = 'email_account.health_changed' AND line_id = $1 ORDER BY id`, [lineId]);
  }

  it('is edge-triggered: unhealthy once, no event for a repeated failure, recovered once; scoped endpoints hear only their mailboxes', async () => {
    const s = await createSession(m.admin, { lines: ['EMAIL_ACCOUNT', 'PHONE_NUMBER'] });
    const mail = mailOf(s);
    const phone = phoneOf(s);
    const events = ['email_account.health_changed'];
    const concise = await Hook.register(m, s.apiKey, { events, mode: 'concise' });
    const verbose = await Hook.register(m, s.apiKey, {
      events,
      mode: 'verbose',
      channelScope: { allChannels: false, channels: [{ channelType: 'EMAIL_ACCOUNT', channelId: mail.id }] },
    });
    const elsewhere = await Hook.register(m, s.apiKey, {
      events: [...events, 'message.received'],
      channelScope: { allChannels: false, channels: [{ channelType: 'PHONE_NUMBER', channelId: phone.id }] },
    });

    const healthy = await sync(mail.id, { ok: true });
    expect(healthy.status).toBe(200);
    expect(healthy.body).toEqual({
      lineId: mail.id,
      emailAddress: mail.address,
      status: 'healthy',
      isActive: true,
      errorKind: null,
      error: null,
      since: null,
      lastSyncedAt: expect.stringMatching(ISO_MS),
      transition: null,
    });
    const lastGoodSync = healthy.body.lastSyncedAt;

    const down = await sync(mail.id, { ok: false, errorKind: 'AUTH', error: 'invalid_grant: token revoked' });
    expect(down.status).toBe(200);
    expect(down.body).toMatchObject({
      status: 'unhealthy',
      isActive: false,
      errorKind: 'AUTH',
      error: 'invalid_grant: token revoked',
      lastSyncedAt: lastGoodSync,
      transition: 'unhealthy',
    });
    const since = down.body.since;
    expect(since).toMatch(ISO_MS);
    // list_email_accounts shows the same state as the event's emailAccount object.
    expect(await toolOk(m, s.apiKey, 'list_email_accounts')).toEqual({
      emailAccounts: [{ id: mail.id, channelType: 'EMAIL_ACCOUNT', emailAddress: mail.address, isActive: false, lastSyncedAt: lastGoodSync }],
    });

    const still = await sync(mail.id, { ok: false, errorKind: 'NETWORK', error: 'ETIMEDOUT' });
    expect(still.body).toMatchObject({ status: 'unhealthy', errorKind: 'NETWORK', error: 'ETIMEDOUT', since, lastSyncedAt: lastGoodSync, transition: null });

    const up = await sync(mail.id, { ok: true });
    expect(up.body).toMatchObject({ status: 'healthy', isActive: true, errorKind: null, error: null, transition: 'recovered' });
    expect(up.body.since).toBe(up.body.lastSyncedAt);
    expect(Date.parse(up.body.since)).toBeGreaterThanOrEqual(Date.parse(since));
    expect((await sync(mail.id, { ok: true })).body.transition).toBeNull();

    const [unhealthy, recovered] = await concise.waitFor(2);
    expect(unhealthy.type).toBe('email_account.health_changed');
    expect(unhealthy.data).toEqual({
      emailAccount: { id: mail.id, emailAddress: mail.address, isActive: false, lastSyncedAt: lastGoodSync },
      health: { status: 'unhealthy', errorKind: 'AUTH', error: 'invalid_grant: token revoked', since },
    });
    expect(recovered.data).toEqual({
      emailAccount: { id: mail.id, emailAddress: mail.address, isActive: true, lastSyncedAt: up.body.lastSyncedAt },
      health: { status: 'recovered', errorKind: null, error: null, since: up.body.since },
    });
    const verboseEvents = await verbose.waitFor(2);
    expect(verboseEvents.map((e) => e.data)).toEqual([unhealthy.data, recovered.data]);
    expect(verboseEvents.map((e) => e.mode)).toEqual(['verbose', 'verbose']);

    // A later event on the phone line reaches `elsewhere`: by then it would have had the health events too.
    await inboundSms(m, phone.address, partnerPhone());
    await elsewhere.waitFor(1, 'message.received');
    expect(elsewhere.events('email_account.health_changed')).toEqual([]);
    expect(concise.events()).toHaveLength(2);
    expect(verbose.events()).toHaveLength(2);
    expect(await healthEvents(mail.id)).toHaveLength(2);
  });

  it('a first-ever failure is unhealthy with lastSyncedAt null; errorKind is optional', async () => {
    const s = await createSession(m.admin, { lines: ['EMAIL_ACCOUNT'] });
    const mail = mailOf(s);
    const first = await sync(mail.id, { ok: false });
    expect(first.body).toMatchObject({ status: 'unhealthy', errorKind: null, error: null, lastSyncedAt: null, transition: 'unhealthy' });
    const [event] = await healthEvents(mail.id);
    expect(event.data).toEqual({
      emailAccount: { id: mail.id, emailAddress: mail.address, isActive: false, lastSyncedAt: null },
      health: { status: 'unhealthy', errorKind: null, error: null, since: first.body.since },
    });
  });

  it('serialises concurrent reports of one mailbox: parallel failures give one event, parallel successes one recovery', async () => {
    const s = await createSession(m.admin, { lines: ['EMAIL_ACCOUNT'] });
    const mail = mailOf(s);
    expect((await sync(mail.id, { ok: true })).body.status).toBe('healthy'); // the health row exists: only the lock orders them
    const failures = await Promise.all(Array.from({ length: 6 }, (_, i) => sync(mail.id, { ok: false, errorKind: 'RATE_LIMIT', error: `429 #${i}` })));
    expect(failures.map((r) => r.status)).toEqual(Array(6).fill(200));
    expect(failures.filter((r) => r.body.transition === 'unhealthy')).toHaveLength(1);
    const oks = await Promise.all(Array.from({ length: 6 }, () => sync(mail.id, { ok: true })));
    expect(oks.filter((r) => r.body.transition === 'recovered')).toHaveLength(1);
    expect((await healthEvents(mail.id)).map((e) => e.data.health.status)).toEqual(['unhealthy', 'recovered']);
  });

  it('answers 404 for a line that is not a live email account, 400 for bad bodies, 401 without the ingest token', async () => {
    const s = await createSession(m.admin, { lines: ['EMAIL_ACCOUNT', 'PHONE_NUMBER'] });
    const mail = mailOf(s);
    const phone = phoneOf(s);
    const notFound = await sync(phone.id, { ok: false, errorKind: 'AUTH' });
    expect(notFound.status).toBe(404);
    expect(notFound.body).toMatchObject({ message: `email account ${phone.id} not found`, field: 'lineId' });
    expect((await sync(randomUUID(), { ok: true })).status).toBe(404);
    expect((await sync('nope', { ok: true })).body).toMatchObject({ statusCode: 400, field: 'lineId' });

    for (const [body, field] of [
      [{}, 'ok'],
      [{ ok: 'false' }, 'ok'],
      [{ ok: false, errorKind: 'auth' }, 'errorKind'],
      [{ ok: false, error: 'x'.repeat(2001) }, 'error'],
      [{ ok: false, extra: 1 }, 'extra'],
      [{ ok: true, errorKind: 'AUTH' }, 'errorKind'],
      [{ ok: true, error: 'fine' }, 'error'],
    ] as const) {
      const res = await sync(mail.id, body);
      expect([res.status, res.body.field ?? res.body.message]).toEqual([400, expect.stringContaining(field)]);
    }
    expect((await sync(mail.id, { ok: false }, s.apiKey)).status).toBe(401);
    expect((await m.http().post(`/ingest/email-accounts/${mail.id}/sync`).send({ ok: false })).status).toBe(401);
    expect(await healthEvents(mail.id)).toEqual([]);

    expect((await m.admin.delete(`/admin/lines/${mail.id}`)).status).toBe(204);
    expect((await sync(mail.id, { ok: false })).status).toBe(404);
  });
});
