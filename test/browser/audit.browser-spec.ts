import { DataSource } from 'typeorm';
import { inboundSms, partnerPhone } from '../support/messaging-hooks';
import { callTool, toolOk } from '../support/mcp';
import { createSession } from '../support/session';
import { expectAccessible, PHONE_VIEWPORT, screenshot, signInAs, useBrowser } from './support/browser';

jest.setTimeout(180_000);

/**
 * Settings → Audit trail in chromium: an agent's key sends and is refused, a person replies on a
 * page, the operator makes a key; the owner sees each change once, filters by the key and by
 * date, and pages with Older; a MEMBER has no link and gets 403.
 */
describe('browser: Settings → Audit trail', () => {
  const b = useBrowser();

  it('lists every change of the org once, filters by key and dates, pages; a MEMBER may not see it', async () => {
    const owner = await createSession(b.app.admin, { role: 'OWNER', lines: ['PHONE_NUMBER'] });
    const [phone] = owner.lines;
    const agent = (await b.app.admin.post(`/admin/users/${owner.userId}/api-keys`, { name: 'Reservations agent', channelAccess: { mode: 'ALL' } }).expect(201))
      .body;
    const partner = partnerPhone();
    const { threadId } = await inboundSms(b.app, phone.address, partner, 'Is the table for two still free at 8?');
    const sent = await toolOk(b.app, agent.key, 'send_sms', { to: partner, body: 'Yes, it is: see you at 8.' });
    expect((await callTool(b.app, agent.key, 'send_sms', { to: phone.address, body: 'to our own line' })).isError).toBe(true);
    await toolOk(b.app, agent.key, 'label_thread', { threadId, add: [{ name: 'bookings' }] });
    await toolOk(b.app, agent.key, 'list_threads', {}); // a read: never listed

    const page = b.page;
    await signInAs(b.app, page, owner.userId);
    // The person's own change on a page: a reply on the thread.
    await page.goto(`/conversations/${threadId}`);
    await page.getByLabel(/^SMS to/).fill('We look forward to it.');
    await page.getByRole('button', { name: 'Send reply' }).click();
    await page.waitForURL((url) => url.pathname === `/conversations/${threadId}` && url.search.includes('sent'));

    await page.getByRole('link', { name: 'Audit trail' }).click();
    await page.getByRole('heading', { name: 'Audit trail', level: 1 }).waitFor();
    const rows = page.locator('table.data tbody tr');
    const actions = async () => (await rows.locator('td[data-label="Action"] code').allTextContents()).sort();
    expect(await actions()).toEqual(
      [
        // The operator (admin API) made the person, their line, their first key, the agent's key and the sign-in link.
        'POST /admin/orgs/:orgId/users',
        'POST /admin/orgs/:orgId/lines',
        'PUT /admin/lines/:lineId/members/:userId',
        'POST /admin/users/:userId/api-keys',
        'POST /admin/users/:userId/api-keys',
        'POST /admin/users/:userId/sign-in-links',
        'POST /conversations/:threadId/reply',
        'label_thread',
        'send_sms',
        'send_sms',
      ].sort(),
    );
    const refused = rows.filter({ hasText: 'SEND_REFUSED' });
    expect(await refused.locator('td[data-label="Outcome"]').innerText()).toMatch(/Refused SEND_REFUSED\s+rule: own_line/);
    const sentRow = rows.filter({ has: page.locator('code', { hasText: sent.message.id }) });
    expect(await sentRow.locator('td[data-label="Who"]').innerText()).toMatch(/API key “Reservations agent”\s+for Test User/);
    expect(await rows.filter({ hasText: 'POST /conversations/:threadId/reply' }).locator('td[data-label="Who"]').innerText()).toBe('Test User');
    expect(await rows.locator('time[datetime]').count()).toBe(10);
    expect(await page.locator('main').innerText()).not.toContain('Yes, it is'); // never a message's text

    // By the key: only its three calls.
    await page.getByLabel('API key or app').selectOption({ label: 'Reservations agent (API key)' });
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL((url) => url.searchParams.get('credentialId') === agent.id);
    expect(await actions()).toEqual(['label_thread', 'send_sms', 'send_sms']);
    await expectAccessible(page, 'Audit trail');
    await screenshot(page, 'audit');
    await screenshot(page, 'audit-phone', { viewport: PHONE_VIEWPORT });

    // By dates: tomorrow on holds nothing; a bad date names its field.
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    await page.goto(`/settings/audit?since=${tomorrow}`);
    await page.getByText('No changes match these filters.').waitFor();
    b.problems.allow(/\b400\b/);
    const bad = await page.goto('/settings/audit?since=yesterday');
    expect(bad?.status()).toBe(400);
    expect(await page.getByLabel('From (UTC)').getAttribute('aria-invalid')).toBe('true');

    // Pages of 50: older rows of the key behind "Older".
    await b.app.app.get(DataSource).query(
      `INSERT INTO audit_events (id, org_id, at, actor_kind, credential_id, user_id, action, surface, targets, outcome)
       SELECT gen_random_uuid(), $1, now() - make_interval(days => 2, secs => n), 'api_key', $2, $3, 'create_contact', 'mcp', '{}', 'ok' FROM generate_series(1, 50) AS n`,
      [owner.orgId, agent.id, owner.userId],
    );
    await page.goto(`/settings/audit?credentialId=${agent.id}`);
    expect(await rows.count()).toBe(50);
    await page.getByRole('link', { name: 'Older' }).click();
    expect(await rows.count()).toBe(3);
    expect(await page.getByRole('link', { name: 'Older' }).count()).toBe(0);

    // A MEMBER: no link, and the page is refused.
    const member = await createSession(b.app.admin, { orgId: owner.orgId, role: 'MEMBER', lines: ['PHONE_NUMBER'] });
    await page.context().clearCookies();
    await signInAs(b.app, page, member.userId);
    expect(await page.getByRole('link', { name: 'Audit trail' }).count()).toBe(0);
    b.problems.allow(/\b403\b/);
    const refusedPage = await page.goto('/settings/audit');
    expect(refusedPage?.status()).toBe(403);
  });
});
