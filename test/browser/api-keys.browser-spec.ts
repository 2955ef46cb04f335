import { createSession, Session } from '../support/session';
import { expectAccessible, screenshot, useBrowser } from './support/browser';

/** Settings → API keys in a real chromium: New key, copy the secret, use it, change its lines, revoke it. */
describe('browser: Settings → API keys', () => {
  const b = useBrowser();

  /** A JSON-RPC tools/call to /api/mcp from the test (not the page): its HTTP status and structured result. */
  async function mcp(key: string, tool: string): Promise<{ status: number; result?: Record<string, any> }> {
    const res = await fetch(`${b.baseUrl}/api/mcp`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', Authorization: `Bearer ${key}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: tool, arguments: {} } }),
    });
    const body = res.status === 200 ? ((await res.json()) as { result: { structuredContent: Record<string, any> } }) : undefined;
    return { status: res.status, result: body?.result.structuredContent };
  }
  const phonesOf = async (key: string) =>
    ((await mcp(key, 'list_phone_numbers')).result!.phoneNumbers as Array<{ id: string; phoneNumber?: string }>).map((p) => p.id);

  async function signIn(session: Session): Promise<void> {
    const link = await b.app.admin.post(`/admin/users/${session.userId}/sign-in-links`).expect(201);
    await b.page.goto(link.body.url);
    await b.page.getByRole('button', { name: 'Sign in' }).click();
    await b.page.waitForURL('**/conversations');
    await b.page.goto('/settings/api-keys');
  }

  it('New key with Specific lines → copy the secret → it reaches that line only; edit to All channels; revoke → 401', async () => {
    const owner = await createSession(b.app.admin, { role: 'OWNER', lines: ['PHONE_NUMBER', 'PHONE_NUMBER', 'EMAIL_ACCOUNT'] });
    await createSession(b.app.admin, { orgId: owner.orgId, role: 'MEMBER', lines: ['PHONE_NUMBER'] }); // another key in the list
    const [phoneA, phoneB] = owner.lines;
    const page = b.page;
    await signIn(owner);

    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    await expectAccessible(page, 'API keys list');
    await screenshot(page, 'api-keys');

    await page.getByRole('link', { name: 'New key' }).click();
    await page.getByRole('heading', { name: 'New API key' }).waitFor();
    expect(await page.getByRole('radio', { name: 'All channels' }).isChecked()).toBe(true);
    await page.getByLabel('Name').fill('Support bot');
    await page.getByRole('radio', { name: 'Specific lines' }).check();
    await page.getByRole('checkbox', { name: phoneA.address }).check();
    await expectAccessible(page, 'new key form');
    await screenshot(page, 'api-keys-new');
    await page.getByRole('button', { name: 'Create key' }).click();

    await page.getByRole('heading', { name: 'API key created' }).waitFor();
    const field = page.getByLabel('Your new API key');
    expect(await field.getAttribute('readonly')).not.toBeNull();
    const secret = await field.inputValue();
    expect(secret).toMatch(/^csk_[0-9a-f]{48}$/);
    expect(page.url()).not.toContain(secret);
    expect(await page.getByRole('button', { name: 'Copy' }).isVisible()).toBe(true); // shown by the served script
    expect(await page.getByRole('status').first().textContent()).toContain('will not be shown again');
    await expectAccessible(page, 'key created');
    // The screenshot must not show a live secret: the key is revoked at the end of this test anyway.
    await screenshot(page, 'api-keys-created');

    expect(await phonesOf(secret)).toEqual([phoneA.id]);

    await page.getByRole('link', { name: 'Back to API keys' }).click();
    expect(await page.content()).not.toContain(secret);
    await page.getByRole('link', { name: 'Edit channel access for Support bot' }).click();
    await page.getByRole('heading', { name: 'Access of “Support bot”' }).waitFor();
    expect(await page.getByRole('radio', { name: 'Specific lines' }).isChecked()).toBe(true);
    expect(await page.getByRole('checkbox', { name: phoneA.address }).isChecked()).toBe(true);
    await expectAccessible(page, 'edit channel access');
    await screenshot(page, 'api-keys-edit');
    await page.getByRole('radio', { name: 'All channels' }).check();
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Channel access and permissions saved').waitFor();
    expect((await phonesOf(secret)).sort()).toEqual([phoneA.id, phoneB.id].sort());

    await page.getByRole('link', { name: 'Revoke Support bot' }).click();
    await page.getByRole('heading', { name: 'Revoke “Support bot”?' }).waitFor();
    await expectAccessible(page, 'revoke confirmation');
    await screenshot(page, 'api-keys-revoke');
    await page.getByRole('button', { name: 'Revoke key' }).click();
    await page.getByText('The key was revoked').waitFor();
    expect(await page.getByRole('link', { name: 'Revoke Support bot' }).count()).toBe(0);
    expect((await mcp(secret, 'list_phone_numbers')).status).toBe(401);
  });

  it('works with the keyboard: a name, Specific lines and a line chosen without the mouse; an error names the field', async () => {
    const owner = await createSession(b.app.admin, { role: 'MEMBER', lines: ['PHONE_NUMBER'] });
    const page = b.page;
    await signIn(owner);
    await page.goto('/settings/api-keys/new');
    // The refused form, on purpose: its 400 and the console line chromium writes for it.
    b.problems.allow(/HTTP 400: POST .*\/settings\/api-keys$/).allow(/^console error: Failed to load resource: .* 400 .*\/settings\/api-keys:\d+\)$/);

    await page.getByLabel('Name').focus();
    await page.keyboard.type('Keyboard key');
    await page.keyboard.press('Tab'); // → All channels
    await page.keyboard.press('ArrowDown'); // → Specific lines
    expect(await page.getByRole('radio', { name: 'Specific lines' }).isChecked()).toBe(true);
    await page.keyboard.press('Enter'); // submits with no line chosen
    await page.getByText('Choose at least one line').waitFor();
    expect(await page.getByLabel('Name').inputValue()).toBe('Keyboard key');
    expect(await page.getByRole('radio', { name: 'Specific lines' }).isChecked()).toBe(true);

    await page.getByRole('checkbox', { name: owner.lines[0].address }).focus();
    await page.keyboard.press('Space');
    await page.getByRole('button', { name: 'Create key' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'API key created' }).waitFor();
    expect(await phonesOf(await page.getByLabel('Your new API key').inputValue())).toEqual([owner.lines[0].id]);
  });

  it('Permissions: a key with only Read through the form is listed with its permissions and lists only read tools; none ticked shows an error', async () => {
    const owner = await createSession(b.app.admin, { role: 'OWNER', lines: ['PHONE_NUMBER'] });
    const page = b.page;
    await signIn(owner);
    await page.goto('/settings/api-keys/new');
    b.problems.allow(/HTTP 400: POST .*\/settings\/api-keys$/).allow(/^console error: Failed to load resource: .* 400 .*\/settings\/api-keys:\d+\)$/);
    for (const name of ['Read', 'Send', 'Webhooks']) expect(await page.getByRole('checkbox', { name }).isChecked()).toBe(true);

    // None ticked: the error names the fieldset, the rest of the form is kept.
    await page.getByLabel('Name').fill('Nothing at all');
    for (const name of ['Read', 'Send', 'Webhooks']) await page.getByRole('checkbox', { name }).uncheck();
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByText('Choose at least one permission').waitFor();
    expect(await page.getByRole('group', { name: 'Permissions' }).getAttribute('aria-invalid')).toBe('true');
    expect(await page.getByLabel('Name').inputValue()).toBe('Nothing at all');
    await expectAccessible(page, 'permissions error');
    await screenshot(page, 'api-keys-permissions-error');

    await page.getByLabel('Name').fill('Read-only agent');
    await page.getByRole('checkbox', { name: 'Read' }).check();
    await expectAccessible(page, 'only Read ticked');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByRole('heading', { name: 'API key created' }).waitFor();
    const secret = await page.getByLabel('Your new API key').inputValue();

    const res = await fetch(`${b.baseUrl}/api/mcp`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json', Authorization: `Bearer ${secret}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    const { tools } = ((await res.json()) as { result: { tools: Array<{ name: string; annotations: { readOnlyHint: boolean } }> } }).result;
    expect(tools.length).toBeGreaterThan(5);
    expect(tools.filter((tool) => !tool.annotations.readOnlyHint || tool.name.includes('webhook'))).toEqual([]);
    expect((await mcp(secret, 'list_phone_numbers')).status).toBe(200);

    await page.getByRole('link', { name: 'Back to API keys' }).click();
    const row = page.getByRole('row', { name: /Read-only agent/ });
    expect(await row.getByRole('cell').nth(2).textContent()).toBe('Read');
    expect(
      await page
        .getByRole('row', { name: /test key/ })
        .getByRole('cell')
        .nth(2)
        .textContent(),
    ).toBe('Read, Send, Webhooks');
    await screenshot(page, 'api-keys-permissions');
  });
});
