import { DataSource } from 'typeorm';
import { HOST_RESOLVER } from '../../src/outbound-http/url-policy';
import { createTestApp, TestApp } from '../support/app';
import { MutableResolver } from '../support/delivery';
import { createSession, Session } from '../support/session';
import { PAGE_ORIGIN, signInBrowser } from '../support/web';

/** The origin of PUBLIC_BASE_URL in the test environment (test/support/env.ts). */
const ORIGIN = PAGE_ORIGIN;

/** Settings → Webhooks: pages over the services the MCP tools call (docs/web.md, "Webhooks"). */
describe('web: the webhooks pages', () => {
  let t: TestApp;
  let db: DataSource;
  const resolver = new MutableResolver(); // every host name answers a public address

  beforeAll(async () => {
    t = await createTestApp({ overrides: (b) => b.overrideProvider(HOST_RESOLVER).useValue(resolver) });
    db = t.app.get(DataSource);
  });
  afterAll(async () => {
    await t?.close();
  });

  interface Browser {
    cookie: string;
    csrf: string;
    session: Session;
  }

  async function signIn(session: Session): Promise<Browser> {
    return { ...(await signInBrowser(t, session.userId)), session };
  }

  const get = (b: Browser, path: string) => t.http().get(path).set('Cookie', b.cookie);
  const post = (b: Browser, path: string, fields: Record<string, string> = {}, origin: string | null = ORIGIN) => {
    const req = t.http().post(path).set('Cookie', b.cookie).type('form');
    return (origin === null ? req : req.set('Origin', origin)).send({ _csrf: b.csrf, ...fields });
  };

  /** Adds an endpoint through the page; answers its id and the secret shown. */
  async function addEndpoint(b: Browser, fields: Record<string, string> = {}): Promise<{ id: string; secret: string }> {
    const res = await post(b, '/settings/webhooks', {
      url: 'https://hooks.example.org/in',
      'events.message.received': 'on',
      mode: 'concise',
      scope: 'all',
      ...fields,
    }).expect(201);
    const secret = /id="secret" type="text" readonly value="([0-9a-f]{64})"/.exec(res.text)?.[1];
    const id = /href="\/settings\/webhooks\/([0-9a-f-]{36})"/.exec(res.text)?.[1];
    expect(secret).toBeDefined();
    return { id: id!, secret: secret! };
  }

  const endpointRow = async (id: string) =>
    (await db.query(`SELECT status, url, secret_sealed, all_channels FROM webhook_endpoints WHERE id = $1`, [id]))[0] as
      { status: string; url: string; secret_sealed: string; all_channels: boolean } | undefined;

  it('adds an endpoint: the secret is shown once, no-store, and the list shows it with "none yet"', async () => {
    const b = await signIn(await createSession(t.admin, { lines: ['PHONE_NUMBER'] }));
    const form = await get(b, '/settings/webhooks/new').expect(200);
    expect(form.text).toContain('<label for="url">URL</label>');
    expect(form.text).toContain('<label for="messageHistoryCount">Message history</label>');
    expect(form.text).toContain(`<label for="line-${b.session.lines[0].id}">${b.session.lines[0].address}</label>`);
    expect(form.text.match(/type="checkbox" id="event-/g)).toHaveLength(13);

    const res = await post(b, '/settings/webhooks', {
      url: 'https://hooks.example.org/in',
      'events.message.received': 'on',
      'events.thread.created': 'on',
      mode: 'verbose',
      messageHistoryCount: '3',
      scope: 'lines',
      [`lines.${b.session.lines[0].id}`]: 'on',
    }).expect(201);
    expect(res.headers['cache-control']).toBe('no-store');
    const secret = /value="([0-9a-f]{64})"/.exec(res.text)![1];
    expect(res.text).toContain('data-copy="secret"');
    const id = /href="\/settings\/webhooks\/([0-9a-f-]{36})"/.exec(res.text)![1];

    const list = await get(b, '/settings/webhooks').expect(200);
    expect(list.text).toContain('<caption>Your webhook endpoints</caption>');
    expect(list.text).toContain('https://hooks.example.org/in');
    expect(list.text).toContain('message.received, thread.created');
    expect(list.text).toContain(b.session.lines[0].address);
    expect(list.text).toContain('none yet');
    expect(list.text).not.toContain(secret);
    const page = await get(b, `/settings/webhooks/${id}`).expect(200);
    expect(page.text).toContain('verbose, message history 3');
    expect(page.text).not.toContain(secret);
  });

  it('Standard Webhooks: the form chooses v1a and turns the legacy header off; the answer shows both secret forms and the public key; edit switches back', async () => {
    const b = await signIn(await createSession(t.admin));
    const form = await get(b, '/settings/webhooks/new').expect(200);
    expect(form.text).toMatch(/id="signature-v1" name="signatureVersion" value="v1" checked\/>/);
    expect(form.text).toMatch(/id="legacySignature" name="legacySignature" value="on" checked/);

    const res = await post(b, '/settings/webhooks', {
      url: 'https://hooks.example.org/v1a',
      'events.message.received': 'on',
      scope: 'all',
      signatureVersion: 'v1a',
    }).expect(201);
    const secret = /id="secret" type="text" readonly value="([0-9a-f]{64})"/.exec(res.text)![1];
    expect(res.text).toContain(`id="signingSecret" type="text" readonly value="whsec_${Buffer.from(secret).toString('base64')}"`);
    const publicKey = /id="publicKey" type="text" readonly value="(whpk_[A-Za-z0-9+/=]+)"/.exec(res.text)![1];
    const id = /href="\/settings\/webhooks\/([0-9a-f-]{36})"/.exec(res.text)![1];
    expect(res.text).toContain(`href="/webhooks/${id}/jwks.json"`);
    expect((await db.query(`SELECT signature_version, legacy_signature, public_key FROM webhook_endpoints WHERE id = $1`, [id]))[0]).toEqual({
      signature_version: 'v1a',
      legacy_signature: false,
      public_key: publicKey,
    });

    const page = await get(b, `/settings/webhooks/${id}`).expect(200);
    expect(page.text).toContain('v1a (ed25519), legacy X-Service-Signature off');
    expect(page.text).toContain(`value="${publicKey}"`);
    expect(page.text).not.toContain(secret);

    const edit = await get(b, `/settings/webhooks/${id}/edit`).expect(200);
    expect(edit.text).toMatch(/id="signature-v1a" name="signatureVersion" value="v1a" checked\/>/);
    const refused = await post(b, `/settings/webhooks/${id}/edit`, {
      url: 'https://hooks.example.org/v1a',
      'events.message.received': 'on',
      scope: 'all',
      signatureVersion: 'v2',
    }).expect(400);
    expect(refused.text).toMatch(/<p class="field-error" id="signatureVersion-error">signatureVersion must be [^<]*<\/p>/);
    await post(b, `/settings/webhooks/${id}/edit`, {
      url: 'https://hooks.example.org/v1a',
      'events.message.received': 'on',
      scope: 'all',
      signatureVersion: 'v1',
      legacySignature: 'on',
    }).expect(303);
    const back = await get(b, `/settings/webhooks/${id}`).expect(200);
    expect(back.text).toContain('v1 (HMAC-SHA256), and the legacy X-Service-Signature');
    expect(back.text).not.toContain('id="publicKey"');
  });

  it('a private URL is refused with the service reason next to the field, 400, the form re-filled; nothing is stored', async () => {
    const b = await signIn(await createSession(t.admin));
    const res = await post(b, '/settings/webhooks', {
      url: 'https://10.1.2.3/hook',
      'events.thread.created': 'on',
      mode: 'verbose',
      messageHistoryCount: '7',
    }).expect(400);
    expect(res.text).toMatch(/<p class="field-error" id="url-error">url host 10\.1\.2\.3, a private [^<]*<\/p>/);
    expect(res.text).toContain('value="https://10.1.2.3/hook"');
    expect(res.text).toMatch(/id="event-thread.created" name="events.thread.created" value="on" checked\/>/);
    expect(res.text).toMatch(/id="mode-verbose" name="mode" value="verbose" checked\/>/);
    expect(res.text).toContain('value="7"');
    expect(await db.query(`SELECT 1 FROM webhook_endpoints WHERE user_id = $1`, [b.session.userId])).toHaveLength(0);

    const none = await post(b, '/settings/webhooks', { url: 'https://hooks.example.org/x' }).expect(400);
    expect(none.text).toContain('<p class="field-error" id="events-error">events must NOT have fewer than 1 items</p>');
    const history = await post(b, '/settings/webhooks', {
      url: 'https://hooks.example.org/x',
      'events.thread.created': 'on',
      messageHistoryCount: '51',
    }).expect(400);
    expect(history.text).toContain('<p class="field-error" id="messageHistoryCount-error">messageHistoryCount must be &lt;= 50</p>');
    const lines = await post(b, '/settings/webhooks', { url: 'https://hooks.example.org/x', 'events.thread.created': 'on', scope: 'lines' }).expect(400);
    expect(lines.text).toContain('channelScope.channels must hold at least 1 entry when allChannels is false');
  });

  it("the plan's cap: past it, the page says how many endpoints the plan allows, 409 as the REST API answers a cap reached", async () => {
    const b = await signIn(await createSession(t.admin, { tier: 'STARTER' }));
    await addEndpoint(b);
    const res = await post(b, '/settings/webhooks', { url: 'https://hooks.example.org/second', 'events.message.received': 'on' }).expect(409);
    expect(res.text).toContain("endpoint cap reached: you may have at most 1 webhook endpoint(s) (the STARTER tier's limit)");
    expect(res.text).toContain('value="https://hooks.example.org/second"');
  });

  it("a MEMBER cannot open or change another user's endpoint (404 page); a malformed id is a 400 page", async () => {
    const owner = await signIn(await createSession(t.admin));
    const { id } = await addEndpoint(owner);
    const member = await signIn(await createSession(t.admin, { orgId: owner.session.orgId, role: 'MEMBER' }));
    for (const path of [`/settings/webhooks/${id}`, `/settings/webhooks/${id}/edit`, `/settings/webhooks/${id}/delete`]) {
      const res = await get(member, path).expect(404);
      expect(res.text).toContain(`Webhook endpoint ${id} not found.`);
    }
    await post(member, `/settings/webhooks/${id}/delete`).expect(404);
    await post(member, `/settings/webhooks/${id}/disable`).expect(404);
    await post(member, `/settings/webhooks/${id}/rotate-secret`).expect(404);
    expect((await endpointRow(id))?.status).toBe('active');
    expect((await get(member, '/settings/webhooks').expect(200)).text).not.toContain(id);
    expect((await get(owner, '/settings/webhooks/not-a-uuid').expect(400)).text).toContain('EndpointId must match format');
  });

  it('without the CSRF token, or from a foreign origin, a POST is refused 403 and changes nothing', async () => {
    const b = await signIn(await createSession(t.admin));
    const { id } = await addEndpoint(b);
    const before = await endpointRow(id);
    await t.http().post(`/settings/webhooks/${id}/delete`).set('Cookie', b.cookie).set('Origin', ORIGIN).type('form').send({}).expect(403);
    await post(b, `/settings/webhooks/${id}/disable`, { _csrf: 'wrong' }).expect(403);
    await post(b, `/settings/webhooks/${id}/rotate-secret`, {}, 'https://evil.example').expect(403);
    await post(b, '/settings/webhooks', { url: 'https://hooks.example.org/csrf', 'events.message.received': 'on' }, 'https://evil.example').expect(403);
    expect(await endpointRow(id)).toEqual(before);
    expect(await db.query(`SELECT 1 FROM webhook_endpoints WHERE user_id = $1`, [b.session.userId])).toHaveLength(1);
  });

  it('rotate shows a new secret once, with the previous one’s expiry; disable and enable; edit saves', async () => {
    const b = await signIn(await createSession(t.admin, { lines: ['EMAIL_ACCOUNT'] }));
    const { id, secret } = await addEndpoint(b);
    const sealed = (await endpointRow(id))!.secret_sealed;
    const rotated = await post(b, `/settings/webhooks/${id}/rotate-secret`).expect(200);
    const next = /id="secret" type="text" readonly value="([0-9a-f]{64})"/.exec(rotated.text)![1];
    expect(next).not.toBe(secret);
    expect(rotated.headers['cache-control']).toBe('no-store');
    expect(rotated.text).toMatch(
      /The previous secret keeps signing deliveries, beside the new one, until <time datetime="[^"]+">\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC<\/time>/,
    );
    expect((await endpointRow(id))!.secret_sealed).not.toBe(sealed);
    expect((await get(b, `/settings/webhooks/${id}`).expect(200)).text).not.toContain(next);

    const disabled = await post(b, `/settings/webhooks/${id}/disable`).expect(303);
    expect(disabled.headers.location).toBe(`/settings/webhooks/${id}?done=disabled`);
    expect((await endpointRow(id))!.status).toBe('disabled');
    const page = await get(b, disabled.headers.location).expect(200);
    expect(page.text).toContain('<span class="status status-disabled">Disabled</span>');
    expect(page.text).toContain('<button type="submit">Enable</button>');
    await post(b, `/settings/webhooks/${id}/enable`).expect(303);
    expect((await endpointRow(id))!.status).toBe('active');

    const line = b.session.lines[0];
    const saved = await post(b, `/settings/webhooks/${id}/edit`, {
      url: 'https://hooks.example.org/edited',
      'events.contact.merged': 'on',
      mode: 'concise',
      messageHistoryCount: '10',
      scope: 'lines',
      [`lines.${line.id}`]: 'on',
    }).expect(303);
    expect(saved.headers.location).toBe(`/settings/webhooks/${id}?done=saved`);
    const after = await get(b, saved.headers.location).expect(200);
    expect(after.text).toContain('The endpoint was saved.');
    expect(after.text).toContain('https://hooks.example.org/edited');
    expect(after.text).toContain(line.address);
    const refused = await post(b, `/settings/webhooks/${id}/edit`, { url: 'https://10.0.0.1/x', 'events.contact.merged': 'on' }).expect(400);
    expect(refused.text).toContain('id="url-error">url host 10.0.0.1');
    expect((await endpointRow(id))!.url).toBe('https://hooks.example.org/edited');
  });

  it('shows a failing run beside the status, and the reason when the service disabled the endpoint, as the owner emails say', async () => {
    const b = await signIn(await createSession(t.admin));
    const { id } = await addEndpoint(b);
    expect((await get(b, `/settings/webhooks/${id}`).expect(200)).text).not.toContain('Failing since');

    await db.query(`UPDATE webhook_endpoints SET failing_since = '2026-11-20T14:03:00Z', consecutive_failures = 42 WHERE id = $1`, [id]);
    const failing = await get(b, `/settings/webhooks/${id}`).expect(200);
    expect(failing.text).toContain('<span class="status status-active">Active</span>');
    expect(failing.text).toMatch(
      /Failing since <time datetime="2026-11-20T14:03:00.000Z">2026-11-20 14:03:00 UTC<\/time>: 42 failed attempts in a\s+row\. It is disabled after 100 in a row or 24 hours of failures; a 2xx ends the run\./,
    );

    const reason = 'auto-disabled after failing continuously since 2026-11-20T14:03:00.000Z';
    await db.query(`UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = $2 WHERE id = $1`, [id, reason]);
    const disabled = await get(b, `/settings/webhooks/${id}`).expect(200);
    expect(disabled.text).toContain(`<span class="status status-disabled">Disabled: ${reason}</span>`);
    expect(disabled.text).not.toContain('Failing since');
  });

  it('delete asks first, then removes the endpoint', async () => {
    const b = await signIn(await createSession(t.admin));
    const { id } = await addEndpoint(b);
    const confirm = await get(b, `/settings/webhooks/${id}/delete`).expect(200);
    expect(confirm.text).toContain('<button type="submit" class="danger">Delete endpoint</button>');
    expect(await endpointRow(id)).toBeDefined();
    const res = await post(b, `/settings/webhooks/${id}/delete`).expect(303);
    expect(res.headers.location).toBe('/settings/webhooks?done=deleted');
    expect(await endpointRow(id)).toBeUndefined();
    expect((await get(b, res.headers.location).expect(200)).text).toContain('The endpoint was deleted.');
    await get(b, `/settings/webhooks/${id}`).expect(404);
  });

  it("recover: the service's bounds are shown next to Since / Until; a good window says how many were queued", async () => {
    const b = await signIn(await createSession(t.admin));
    const { id } = await addEndpoint(b);
    const local = (d: Date) => d.toISOString().slice(0, 19);
    const hour = 3_600_000;

    const missing = await post(b, `/settings/webhooks/${id}/recover`, { since: '' }).expect(400);
    expect(missing.text).toContain('<p class="field-error" id="since-error">since is required</p>');
    const future = await post(b, `/settings/webhooks/${id}/recover`, { since: local(new Date(Date.now() + hour)) }).expect(400);
    expect(future.text).toMatch(/id="since-error">since \([^)]+\) must not be in the future</);
    const inverted = await post(b, `/settings/webhooks/${id}/recover`, {
      since: local(new Date(Date.now() - hour)),
      until: local(new Date(Date.now() - 2 * hour)),
    }).expect(400);
    expect(inverted.text).toMatch(/must not be after until/);
    const long = await post(b, `/settings/webhooks/${id}/recover`, { since: local(new Date(Date.now() - 8 * 24 * hour)) }).expect(400);
    expect(long.text).toContain('the window from since to until may be at most 7 days; recover a longer period in several calls');
    const garbage = await post(b, `/settings/webhooks/${id}/recover`, { since: 'yesterday' }).expect(400);
    expect(garbage.text).toContain('since must match format &quot;date-time&quot;');
    expect(garbage.text).toContain('value="yesterday"');

    const ok = await post(b, `/settings/webhooks/${id}/recover`, { since: local(new Date(Date.now() - hour)).slice(0, 16) }).expect(303);
    expect(ok.headers.location).toBe(`/settings/webhooks/${id}?recovered=0`);
    expect((await get(b, ok.headers.location).expect(200)).text).toContain('0 deliveries queued.');

    await post(b, `/settings/webhooks/${id}/disable`).expect(303);
    const conflict = await post(b, `/settings/webhooks/${id}/recover`, { since: local(new Date(Date.now() - hour)) }).expect(409);
    expect(conflict.text).toContain('is disabled: a recovery would only be cancelled');
  });

  it('the delivery log: the status filter and the cursor are checked as the tool checks them', async () => {
    const b = await signIn(await createSession(t.admin));
    const { id } = await addEndpoint(b);
    const page = await get(b, `/settings/webhooks/${id}?status=failed`).expect(200);
    expect(page.text).toContain('No deliveries with status failed yet.');
    expect(page.text).toContain('<option value="failed" selected>failed</option>');
    expect((await get(b, `/settings/webhooks/${id}?status=bogus`).expect(400)).text).toContain('Status must be one of');
    await get(b, `/settings/webhooks/${id}?cursor=garbage`).expect(400);
  });
});
