import { randomUUID } from 'node:crypto';
import { createMcpTestApp, McpTestApp, rpc, toolOk } from '../support/mcp';
import { createSession } from '../support/session';
import { PAGE_ORIGIN, signInBrowser } from '../support/web';

/** The origin of PUBLIC_BASE_URL in the test environment (test/support/env.ts). */
const ORIGIN = PAGE_ORIGIN;

/** Settings → API keys through its page routes: what a person's forms do, checked on /api/mcp. */
describe('web: Settings → API keys pages', () => {
  let t: McpTestApp;

  beforeAll(async () => {
    t = await createMcpTestApp({ SIGN_IN_RATE_LIMIT_PER_IP: '1000' });
  });
  afterAll(async () => {
    await t.close();
  });

  interface Browser {
    cookie: string;
    csrf: string;
  }

  /** Signs the user in with an admin-made link; the session cookie and its CSRF token. */
  function signIn(userId: string): Promise<Browser> {
    return signInBrowser(t, userId);
  }

  const get = (b: Browser, path: string) => t.http().get(path).set('Cookie', b.cookie);
  /** A form POST as the page sends it: same Origin, the CSRF field, fields as urlencoded text (repeatable names). */
  const post = (b: Browser, path: string, fields: Array<[string, string]>, options: { origin?: string | null; csrf?: boolean } = {}) => {
    const body = new URLSearchParams(options.csrf === false ? fields : [['_csrf', b.csrf], ...fields]).toString();
    const req = t.http().post(path).set('Cookie', b.cookie).type('form');
    const origin = options.origin === undefined ? ORIGIN : options.origin;
    return (origin === null ? req : req.set('Origin', origin)).send(body);
  };

  async function phonesOf(key: string): Promise<string[]> {
    const { phoneNumbers } = await toolOk<{ phoneNumbers: Array<{ id: string }> }>(t, key, 'list_phone_numbers', {});
    return phoneNumbers.map((p) => p.id);
  }
  const mcpStatus = async (key: string) => (await rpc(t, key, 'tools/call', { name: 'list_phone_numbers', arguments: {} })).status;
  const keyIdOf = async (userId: string, name: string): Promise<string> =>
    (await t.db.query('SELECT id FROM api_keys WHERE user_id = $1 AND name = $2', [userId, name]))[0].id;
  const keyCount = async (userId: string): Promise<number> =>
    (await t.db.query('SELECT count(*)::int AS count FROM api_keys WHERE user_id = $1', [userId]))[0].count;
  const secretOf = (html: string) => /id="new-key"[^>]*value="(csk_[0-9a-f]+)"|value="(csk_[0-9a-f]+)"[^>]*id="new-key"/.exec(html)?.slice(1).find(Boolean);

  async function org() {
    const owner = await createSession(t.admin, { role: 'OWNER', lines: ['PHONE_NUMBER', 'PHONE_NUMBER', 'EMAIL_ACCOUNT'] });
    const member = await createSession(t.admin, { orgId: owner.orgId, role: 'MEMBER', lines: ['PHONE_NUMBER'] });
    return { owner, member };
  }

  it('New key with Specific lines: the secret is shown once, works on /api/mcp and reaches only those lines; edit applies at once; revoke gives 401', async () => {
    const { owner } = await org();
    const [phoneA, phoneB, mail] = owner.lines;
    const b = await signIn(owner.userId);

    const form = await get(b, '/settings/api-keys/new').expect(200);
    expect(form.headers['cache-control']).toBe('no-store');
    expect(form.text).toContain('<label for="name">Name</label>');
    expect(form.text).toMatch(/<input type="radio" id="access-all" name="access" value="ALL" checked/);
    for (const line of owner.lines) expect(form.text).toContain(`<label for="line-${line.id}">${line.address}</label>`);
    expect(form.text).toContain('<button type="submit">Create key</button>');

    const created = await post(b, '/settings/api-keys', [
      ['name', 'support bot'],
      ['access', 'LINES'],
      [`line-${phoneA.id}`, 'on'],
      [`line-${mail.id}`, 'on'],
    ]).expect(200);
    expect(created.headers['cache-control']).toBe('no-store');
    expect(created.headers.location).toBeUndefined();
    expect(created.text).toContain('<label for="new-key">Your new API key</label>');
    expect(created.text).toContain('will not be shown again');
    expect(created.text).toContain('data-copy="new-key"');
    const secret = secretOf(created.text)!;
    expect(secret).toMatch(/^csk_[0-9a-f]{48}$/);

    // Shown once: not on the list, not on any later page.
    const list = await get(b, '/settings/api-keys').expect(200);
    expect(list.text).not.toContain(secret);
    expect(list.text).toContain(`csk_…${secret.slice(-4)}`);
    expect(list.text).toContain('support bot');
    expect(list.text).toContain(phoneA.address);
    expect(list.text).toContain(mail.address);
    expect(list.text).toContain('Edit channel access for support bot');
    expect(list.text).toMatch(/Revoke<span class="visually-hidden"> support bot<\/span>/);

    expect(await phonesOf(secret)).toEqual([phoneA.id]);

    // Edit: the form is pre-filled; Specific lines → phone B, then All channels.
    const keyId = await keyIdOf(owner.userId, 'support bot');
    const edit = await get(b, `/settings/api-keys/${keyId}/edit`).expect(200);
    expect(edit.text).toMatch(/id="access-lines" name="access" value="LINES" checked/);
    expect(edit.text).toMatch(new RegExp(`id="line-${phoneA.id}" name="line-${phoneA.id}" value="on" checked`));
    expect(edit.text).not.toMatch(new RegExp(`id="line-${phoneB.id}" name="line-${phoneB.id}" value="on" checked`));
    expect(edit.text).not.toContain(secret);

    const saved = await post(b, `/settings/api-keys/${keyId}/edit`, [
      ['access', 'LINES'],
      [`line-${phoneB.id}`, 'on'],
    ]).expect(303);
    expect(saved.headers.location).toBe('/settings/api-keys?notice=saved');
    expect(await phonesOf(secret)).toEqual([phoneB.id]);
    await post(b, `/settings/api-keys/${keyId}/edit`, [
      ['access', 'ALL'],
      [`line-${phoneB.id}`, 'on'],
    ]).expect(303);
    expect((await phonesOf(secret)).sort()).toEqual([phoneA.id, phoneB.id].sort());
    expect((await get(b, '/settings/api-keys?notice=saved').expect(200)).text).toContain('Channel access and permissions saved');

    // Revoke: a confirmation page, then the POST; the next request with the key gets 401.
    const confirm = await get(b, `/settings/api-keys/${keyId}/revoke`).expect(200);
    expect(confirm.text).toContain('Revoke key</button>');
    expect(confirm.text).toContain(`action="/settings/api-keys/${keyId}/revoke"`);
    const revoked = await post(b, `/settings/api-keys/${keyId}/revoke`, []).expect(303);
    expect(revoked.headers.location).toBe('/settings/api-keys?notice=revoked');
    expect(await mcpStatus(secret)).toBe(401);
    const after = await get(b, '/settings/api-keys?notice=revoked').expect(200);
    expect(after.text).toContain('The key was revoked');
    expect(after.text).not.toContain('support bot');
    await post(b, `/settings/api-keys/${keyId}/revoke`, []).expect(404);
  });

  it('a MEMBER sees only their own keys; revoking or editing the owner’s key is 404 and the key still works', async () => {
    const { owner, member } = await org();
    const b = await signIn(member.userId);
    const list = await get(b, '/settings/api-keys').expect(200);
    expect(list.text).toContain(`csk_…${member.apiKey.slice(-4)}`);
    expect(list.text).not.toContain(`csk_…${owner.apiKey.slice(-4)}`);
    expect(list.text).not.toContain(owner.email);
    expect(list.text).not.toContain('<th scope="col">Owner</th>');

    await get(b, `/settings/api-keys/${owner.apiKeyId}/revoke`).expect(404);
    await get(b, `/settings/api-keys/${owner.apiKeyId}/edit`).expect(404);
    const refused = await post(b, `/settings/api-keys/${owner.apiKeyId}/revoke`, []).expect(404);
    expect(refused.text).toContain('API key not found');
    await post(b, `/settings/api-keys/${owner.apiKeyId}/edit`, [['access', 'ALL']]).expect(404);
    await post(b, '/settings/api-keys/not-a-uuid/revoke', []).expect(404);
    expect(await mcpStatus(owner.apiKey)).toBe(200);
  });

  it('an OWNER sees the org’s keys with their owner’s email, never a secret; may revoke another’s key but not edit it (403)', async () => {
    const { owner, member } = await org();
    const b = await signIn(owner.userId);
    const list = await get(b, '/settings/api-keys').expect(200);
    expect(list.text).toContain('<th scope="col">Owner</th>');
    expect(list.text).toContain(member.email);
    expect(list.text).toContain(`csk_…${member.apiKey.slice(-4)}`);
    expect(list.text).not.toContain(member.apiKey);
    expect(list.text).not.toContain(owner.apiKey);
    expect(list.text).not.toMatch(/csk_[0-9a-f]{8,}/);
    expect(list.text.indexOf(`csk_…${owner.apiKey.slice(-4)}`)).toBeLessThan(list.text.indexOf(`csk_…${member.apiKey.slice(-4)}`)); // own first
    // Both keys are called "test key": only the owner's own has the pencil, both can be revoked.
    expect(list.text.split('Edit channel access for test key').length - 1).toBe(1);
    expect(list.text.split('Revoke<span class="visually-hidden"> test key</span>').length - 1).toBe(2);
    expect(list.text).toContain('never'); // last used

    await get(b, `/settings/api-keys/${member.apiKeyId}/edit`).expect(403);
    const forbidden = await post(b, `/settings/api-keys/${member.apiKeyId}/edit`, [['access', 'ALL']]).expect(403);
    expect(forbidden.text).toContain('Only a key');
    expect((await get(b, `/settings/api-keys/${member.apiKeyId}/revoke`).expect(200)).text).toContain(member.email);
    await post(b, `/settings/api-keys/${member.apiKeyId}/revoke`, []).expect(303);
    expect(await mcpStatus(member.apiKey)).toBe(401);
  });

  it('a POST without the CSRF token, or from another origin, is 403 and changes nothing', async () => {
    const { owner } = await org();
    const b = await signIn(owner.userId);
    const before = await keyCount(owner.userId);
    await post(b, '/settings/api-keys', [['name', 'no token']], { csrf: false }).expect(403);
    await post(
      b,
      '/settings/api-keys',
      [
        ['name', 'wrong token'],
        ['_csrf', 'x'.repeat(43)],
      ],
      { csrf: false },
    ).expect(403);
    await post(b, '/settings/api-keys', [['name', 'cross site']], { origin: 'https://evil.example' }).expect(403);
    await post(b, '/settings/api-keys', [['name', 'no origin']], { origin: null }).expect(403);
    expect(await keyCount(owner.userId)).toBe(before);

    await post(b, `/settings/api-keys/${owner.apiKeyId}/revoke`, [], { csrf: false }).expect(403);
    await post(b, `/settings/api-keys/${owner.apiKeyId}/revoke`, [], { origin: 'https://evil.example' }).expect(403);
    await post(
      b,
      `/settings/api-keys/${owner.apiKeyId}/edit`,
      [
        ['access', 'LINES'],
        [`line-${owner.lines[0].id}`, 'on'],
      ],
      { csrf: false },
    ).expect(403);
    expect(await mcpStatus(owner.apiKey)).toBe(200);
    expect((await phonesOf(owner.apiKey)).length).toBe(2);
  });

  it('Permissions: all ticked by default; a key made with only Read lists only read tools; none ticked is refused; edit changes them', async () => {
    const { owner } = await org();
    const b = await signIn(owner.userId);
    const form = await get(b, '/settings/api-keys/new').expect(200);
    for (const permission of ['read', 'send', 'webhooks']) {
      expect(form.text).toMatch(new RegExp(`<input type="checkbox" id="permission-${permission}" name="permission-${permission}" value="on" checked`));
    }
    expect(form.text).toContain('<input type="hidden" name="permissions-shown" value="on"/>');

    const created = await post(b, '/settings/api-keys', [
      ['name', 'reader'],
      ['access', 'ALL'],
      ['permissions-shown', 'on'],
      ['permission-read', 'on'],
    ]).expect(200);
    const secret = secretOf(created.text)!;
    const tools = (await rpc(t, secret, 'tools/list')).body.result.tools as Array<{ name: string; annotations: { readOnlyHint: boolean } }>;
    expect(tools.length).toBeGreaterThan(5);
    expect(tools.every((tool) => tool.annotations.readOnlyHint && !tool.name.includes('webhook'))).toBe(true);
    const keyId = await keyIdOf(owner.userId, 'reader');
    const list = await get(b, '/settings/api-keys').expect(200);
    expect(list.text).toContain('<th scope="col">Permissions</th>');
    expect(list.text).toMatch(/<th scope="row">reader<\/th>(?:(?!<\/tr>).)*<td>Read<\/td>/s);
    expect(list.text).toMatch(/<th scope="row">test key<\/th>(?:(?!<\/tr>).)*<td>Read, Send, Webhooks<\/td>/s);

    // None ticked: refused next to the fieldset, the form as it was, no key made.
    const before = await keyCount(owner.userId);
    const none = await post(b, '/settings/api-keys', [
      ['name', 'nothing'],
      ['access', 'ALL'],
      ['permissions-shown', 'on'],
    ]).expect(400);
    expect(none.text).toMatch(/<p class="field-error" id="permissions-error">Choose at least one permission/);
    expect(none.text).toContain('The key was not created');
    expect(none.text).toContain('value="nothing"');
    expect(none.text).not.toMatch(/id="permission-read" name="permission-read" value="on" checked/);
    const odd = await post(b, '/settings/api-keys', [
      ['name', 'odd'],
      ['permissions-shown', 'on'],
      ['permission-admin', 'on'],
    ]).expect(400);
    expect(odd.text).toMatch(
      /<p class="field-error" id="permissions-error">Permissions: permissions must each be one of read, send, draft, webhooks; &quot;admin&quot; is not/,
    );
    // Send and Draft only together: refused next to the Permissions group, no key made.
    const both = await post(b, '/settings/api-keys', [
      ['name', 'both'],
      ['access', 'ALL'],
      ['permissions-shown', 'on'],
      ['permission-send', 'on'],
      ['permission-draft', 'on'],
    ]).expect(400);
    expect(both.text).toMatch(/<p class="field-error" id="permissions-error">Permissions: permissions must not hold both send and draft/);
    expect(await keyCount(owner.userId)).toBe(before);
    // Draft only: made, listed as such.
    await post(b, '/settings/api-keys', [
      ['name', 'drafter'],
      ['access', 'ALL'],
      ['permissions-shown', 'on'],
      ['permission-read', 'on'],
      ['permission-draft', 'on'],
    ]).expect(200);
    expect((await get(b, '/settings/api-keys').expect(200)).text).toMatch(/<th scope="row">drafter<\/th>(?:(?!<\/tr>).)*<td>Read, Draft only<\/td>/s);
    expect(await keyCount(owner.userId)).toBe(before + 1);

    // Edit: pre-filled with the key's permissions; a change applies to the next request.
    const edit = await get(b, `/settings/api-keys/${keyId}/edit`).expect(200);
    expect(edit.text).toMatch(/id="permission-read" name="permission-read" value="on" checked/);
    expect(edit.text).not.toMatch(/id="permission-send" name="permission-send" value="on" checked/);
    await post(b, `/settings/api-keys/${keyId}/edit`, [
      ['access', 'ALL'],
      ['permissions-shown', 'on'],
      ['permission-webhooks', 'on'],
    ]).expect(303);
    expect((await toolOk(t, secret, 'list_webhooks', {})).endpoints).toEqual([]);
    expect((await rpc(t, secret, 'tools/call', { name: 'list_threads', arguments: {} })).body.result.content[0].text).toMatch(
      /^list_threads needs the read permission/,
    );
    const editNone = await post(b, `/settings/api-keys/${keyId}/edit`, [
      ['access', 'ALL'],
      ['permissions-shown', 'on'],
    ]).expect(400);
    expect(editNone.text).toContain('Choose at least one permission');
    expect((await t.db.query('SELECT permissions FROM api_keys WHERE id = $1', [keyId]))[0].permissions).toEqual(['webhooks']);
    // A form that did not show the boxes leaves the permissions as they are.
    await post(b, `/settings/api-keys/${keyId}/edit`, [['access', 'ALL']]).expect(303);
    expect((await t.db.query('SELECT permissions FROM api_keys WHERE id = $1', [keyId]))[0].permissions).toEqual(['webhooks']);
  });

  it('validation errors are shown next to the field they name, with the form filled in again (400)', async () => {
    const { owner, member } = await org();
    const [phoneA] = owner.lines;
    const b = await signIn(owner.userId);
    const before = await keyCount(owner.userId);

    const empty = await post(b, '/settings/api-keys', [
      ['name', '   '],
      ['access', 'LINES'],
      [`line-${phoneA.id}`, 'on'],
    ]).expect(400);
    expect(empty.text).toMatch(/<p class="field-error" id="name-error">The name should not be empty\.<\/p>/);
    expect(empty.text).toMatch(/aria-describedby="name-error name-hint"/);
    expect(empty.text).toMatch(/id="access-lines" name="access" value="LINES" checked/);
    expect(empty.text).toMatch(new RegExp(`id="line-${phoneA.id}" name="line-${phoneA.id}" value="on" checked`));

    const long = await post(b, '/settings/api-keys', [['name', 'x'.repeat(201)]]).expect(400);
    expect(long.text).toContain('The name must be at most 200 characters.');
    expect(long.text).toContain(`value="${'x'.repeat(201)}"`);

    const noLine = await post(b, '/settings/api-keys', [
      ['name', 'no line'],
      ['access', 'LINES'],
    ]).expect(400);
    expect(noLine.text).toMatch(/<p class="field-error" id="access-error">Choose at least one line/);
    expect(noLine.text).toContain('value="no line"');

    const foreign = await post(b, '/settings/api-keys', [
      ['name', 'foreign'],
      ['access', 'LINES'],
      [`line-${member.lines[0].id}`, 'on'],
    ]).expect(400);
    expect(foreign.text).toMatch(/<p class="field-error" id="access-error">One of the chosen lines is not one of your lines/);
    const unknown = await post(b, '/settings/api-keys', [
      ['name', 'unknown'],
      ['access', 'LINES'],
      [`line-${randomUUID()}`, 'on'],
    ]).expect(400);
    expect(unknown.text).toContain('One of the chosen lines was not found');
    await post(b, '/settings/api-keys', [
      ['name', 'odd mode'],
      ['access', 'SOME'],
    ]).expect(400);
    expect(await keyCount(owner.userId)).toBe(before);

    const editNoLine = await post(b, `/settings/api-keys/${owner.apiKeyId}/edit`, [['access', 'LINES']]).expect(400);
    expect(editNoLine.text).toContain('Choose at least one line');
    expect(editNoLine.text).toMatch(/id="access-lines" name="access" value="LINES" checked/);
    expect((await phonesOf(owner.apiKey)).length).toBe(2);
  });

  it('the pages need a session: a GET goes to /sign-in, a POST is 403', async () => {
    expect((await t.http().get('/settings/api-keys/new').expect(303)).headers.location).toBe('/sign-in');
    await t.http().post('/settings/api-keys').set('Origin', ORIGIN).type('form').send('name=x').expect(403);
  });
});
