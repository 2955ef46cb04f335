import { randomUUID } from 'node:crypto';
import type { Locator, Page } from 'playwright-core';
import { deliveryEnv } from '../support/delivery';
import { inboundSms, partnerPhone } from '../support/messaging-hooks';
import { toolOk } from '../support/mcp';
import { TestReceiver } from '../support/receiver';
import { createSession } from '../support/session';
import { waitUntil } from '../support/wait';
import { expectAccessible, screenshot, signInAs, useBrowser, VIEWPORT } from './support/browser';
import { exchangeAndConnect, startConnecting, useRedirectTarget } from './support/oauth';

jest.setTimeout(240_000);

/** The phone the issue was tried on (issue 44): 375 × 812. */
const PHONE = { width: 375, height: 812 };
const WIDTHS = [
  { name: 'phone', viewport: PHONE },
  { name: 'desktop', viewport: VIEWPORT },
] as const;

/** The outermost elements that reach past the viewport's right edge, as `tag.class (right edge)`. */
const WIDER_THAN_VIEWPORT = `[...document.body.querySelectorAll('*')]
  .filter((e) => e.checkVisibility() && e.getBoundingClientRect().right > innerWidth + 0.5)
  .filter((e, _, all) => !all.includes(e.parentElement))
  .slice(0, 5)
  .map((e) => {
    const name = (x) => x.tagName.toLowerCase() + (typeof x.className === 'string' && x.className ? '.' + x.className.split(' ').join('.') : '');
    return name(e.parentElement) + ' > ' + name(e) + ' (' + Math.round(e.getBoundingClientRect().right) + ' px): ' + (e.textContent || '').trim().slice(0, 40);
  })`;

/** What one page must show without horizontal scrolling: each locator, at every width, wholly inside the viewport's width. */
interface Check {
  /** docs/ui/<name>.png and <name>-phone.png, written only by this test (others write their own names). */
  screenshot?: string;
  /** The elements a person came for: a table's key column and its action (Revoke, Connect…). */
  visible: (page: Page) => Locator[];
}

/**
 * Every page at a phone's width (375 × 812) and a desktop's, with data in every table (made
 * through the admin API, the ingest routes, the MCP tools, the pages and an OAuth connection, as
 * a person and their agents make it): nothing is wider than the viewport
 * (`document.documentElement.scrollWidth <= innerWidth`), each table's key column and action lie
 * inside the viewport (tables stack into rows on a phone instead of scrolling sideways), the
 * first conversation is above the fold on a phone, and axe finds nothing serious at either width.
 */
describe('every page fits a phone and a desktop', () => {
  const receiver = new TestReceiver();
  const env = deliveryEnv('web-pages-fit', { DELIVERY_RETRY_SCHEDULE: '100ms' });
  const b = useBrowser({ app: { env } });
  const redirectTarget = useRedirectTarget();
  let receiverUrl: string;
  /** Each page's widths as measured (scrollWidth per viewport), printed at the end for the record. */
  const measured: Record<string, Record<string, number>> = {};

  beforeAll(async () => {
    receiverUrl = await receiver.start();
  });
  afterAll(async () => {
    await receiver.stop();
    console.log(
      `page widths (scrollWidth at 375 px / 1280 px):\n${Object.entries(measured)
        .map(([page, widths]) => `  ${page}: ${widths.phone} / ${widths.desktop}`)
        .join('\n')}`,
    );
  });

  /** Visits the page as it is now at both widths and checks it (see the describe). */
  async function expectFits(page: Page, name: string, check: Check): Promise<void> {
    for (const { name: width, viewport } of WIDTHS) {
      await page.setViewportSize(viewport);
      const { scrollWidth, innerWidth } = (await page.evaluate('({ scrollWidth: document.documentElement.scrollWidth, innerWidth })')) as {
        scrollWidth: number;
        innerWidth: number;
      };
      (measured[name] ??= {})[width] = scrollWidth;
      // What sticks out, said by the failure: the outermost elements whose right edge passes the viewport's.
      const wider = scrollWidth > innerWidth ? await page.evaluate(WIDER_THAN_VIEWPORT) : [];
      expect({ page: name, width, scrollWidth, wider }).toEqual({ page: name, width, scrollWidth: Math.min(scrollWidth, innerWidth), wider: [] });
      // No table scrolls sideways inside its own box either (a column hidden to the right is as lost).
      const scrolled = await page.evaluate(`[...document.querySelectorAll('.table-scroll')].map((box) => box.scrollWidth - box.clientWidth)`);
      expect({ page: name, width, scrolled }).toEqual({ page: name, width, scrolled: (scrolled as number[]).map(() => 0) });
      const shown = check.visible(page);
      for (const locator of shown) {
        const boxes = await Promise.all((await locator.all()).map((one) => one.boundingBox()));
        expect(boxes.length).toBeGreaterThan(0);
        for (const box of boxes) {
          expect(box).not.toBeNull();
          expect({ page: name, width, left: box!.x >= 0, right: box!.x + box!.width <= innerWidth }).toEqual({ page: name, width, left: true, right: true });
        }
      }
      await expectAccessible(page, `${name} (${width})`);
    }
    if (check.screenshot) {
      await screenshot(page, check.screenshot);
      await screenshot(page, `${check.screenshot}-phone`, { viewport: PHONE });
    }
    await page.setViewportSize(VIEWPORT);
  }

  it('public pages, consent, every signed-in page with data in every table, and the error page', async () => {
    const page = b.page;
    b.problems.allow(/\b404\b/); // the not-found page, visited on purpose
    const owner = await createSession(b.app.admin, { role: 'OWNER', lines: ['PHONE_NUMBER', 'EMAIL_ACCOUNT'] });
    const [phone] = owner.lines;

    // Conversations: several threads, one with a long message; the partner's name is long.
    const partner = partnerPhone();
    const { threadId } = await inboundSms(
      b.app,
      phone.address,
      partner,
      'Hello! Could you confirm the booking for Saturday? https://booking.example.org/reservations/2026/11/28/confirmation?reference=ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789',
    );
    for (let i = 0; i < 3; i += 1) await inboundSms(b.app, phone.address, partnerPhone(), `Question number ${i + 1} about opening hours`);

    // Approvals: a DRAFT agent's reply waits.
    const agentId = (await b.app.admin.post(`/admin/lines/${phone.id}/agents`, { name: 'Front desk assistant', mode: 'DRAFT' }).expect(201)).body.id;
    await b.app
      .http()
      .post(`/api/agents/${agentId}/turns`)
      .set('Authorization', `Bearer ${owner.apiKey}`)
      .send({ threadId, body: 'Yes, the booking for Saturday is confirmed. Would you like us to prepare a birthday cake as well?' })
      .expect(201);

    // API keys: one with a long name on specific lines.
    await b.app.admin
      .post(`/admin/users/${owner.userId}/api-keys`, {
        name: 'Nightly reconciliation agent for the reservations desk',
        channelAccess: { mode: 'LINES', lines: [phone.address] },
      })
      .expect(201);

    // Webhooks: an endpoint with a long URL that answers, and one that fails, each with deliveries.
    const longPath = `/hooks/reservations/${randomUUID()}/events/incoming-messages-for-the-front-desk`;
    const ok = await toolOk<{ endpoint: { id: string } }>(b.app, owner.apiKey, 'register_webhook', {
      url: `${receiverUrl}${longPath}`,
      events: ['message.received'],
      mode: 'concise',
    });
    receiver.respond = (req) => (req.url.startsWith('/failing') ? { status: 503, body: 'maintenance window: try again later' } : { status: 200, body: 'ok' });
    await toolOk(b.app, owner.apiKey, 'register_webhook', { url: `${receiverUrl}/failing/endpoint`, events: ['message.received'], mode: 'verbose' });
    for (let i = 0; i < 3; i += 1) await inboundSms(b.app, phone.address, partner, `Follow-up ${i + 1}: we are now six people, is that fine?`);
    await waitUntil(() => receiver.requests.filter((r) => r.url === longPath).length >= 3, 'three deliveries at the endpoint', { timeoutMs: 20_000 });
    // The last word on the first thread is ours: the list says so ("You:").
    await toolOk(b.app, owner.apiKey, 'reply_to_thread', { threadId, body: 'Confirmed: see you on Saturday at 8 pm, a table for four by the window.' });

    // The OAuth hand-off: sign-in (public), consent, Allow; Connected apps then lists the app.
    const target = redirectTarget();
    const { host, serverUrl } = await startConnecting(b, target, 'Reservations Assistant for Claude Desktop');
    await expectFits(page, 'sign-in', { screenshot: 'sign-in', visible: (p) => [p.getByRole('button', { name: 'Email me a sign-in link' })] });
    const link = await b.app.admin.post(`/admin/users/${owner.userId}/sign-in-links`).expect(201);
    await page.goto(link.body.url);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL((url) => url.pathname === '/oauth/authorize');
    await expectFits(page, 'consent', { visible: (p) => [p.getByRole('button', { name: 'Allow' }), p.getByRole('button', { name: 'Deny' })] });
    expect(await page.getByRole('navigation', { name: 'Main' }).count()).toBe(0); // a hand-off: no app navigation
    expect(await page.locator('main').innerText()).not.toMatch(/\bthe key\b/i);
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL((url) => url.href.startsWith(target.redirectUri));
    const { client } = await exchangeAndConnect(host, serverUrl, target.received[0].searchParams.get('code'), 'pages-fit');
    await client.close();

    await page.goto('/conversations');
    await expectFits(page, 'conversations', { visible: (p) => [p.locator('#live-threads .thread-row .partner')] });
    await page.setViewportSize(PHONE);
    const first = (await page.locator('#live-threads .thread-row').first().boundingBox())!;
    expect(first.y).toBeLessThan(PHONE.height);
    // Who wrote the last message: "You:" on the thread we answered last, nothing where the partner wrote.
    const rows = page.locator('#live-threads .thread-row');
    expect(await rows.first().locator('.preview').textContent()).toBe('You: Confirmed: see you on Saturday at 8 pm, a table for four by the window.');
    expect(await rows.nth(1).locator('.writer').count()).toBe(0);
    await page.setViewportSize(VIEWPORT);

    await page.goto(`/conversations/${threadId}`);
    await expectFits(page, 'thread', { visible: (p) => [p.locator('.message').first(), p.getByRole('button', { name: 'Send reply' })] });

    await page.goto('/approvals');
    await expectFits(page, 'approvals', {
      visible: (p) => [p.getByRole('button', { name: 'Approve', exact: true }), p.getByRole('button', { name: 'Reject' })],
    });

    await page.goto('/settings/api-keys');
    await expectFits(page, 'api-keys', {
      screenshot: 'api-keys',
      visible: (p) => [p.locator('table.data tbody th[scope="row"]'), p.locator('table.data tbody').getByRole('link', { name: /^Revoke/ })],
    });

    await page.goto('/settings/connected-apps');
    await expectFits(page, 'connected-apps', {
      visible: (p) => [p.locator('table.data tbody th[scope="row"]'), p.locator('table.data tbody').getByRole('link', { name: /^Revoke/ })],
    });

    // The audit trail: the operator's, the agent's and the person's changes above (screenshots: audit.browser-spec.ts).
    await page.goto('/settings/audit');
    await expectFits(page, 'audit', {
      visible: (p) => [
        p.locator('table.data tbody th[scope="row"]'),
        p.locator('table.data tbody td[data-label="Action"]'),
        p.getByRole('button', { name: 'Filter' }),
      ],
    });

    await page.goto('/settings/webhooks');
    await expectFits(page, 'webhooks', { screenshot: 'webhooks', visible: (p) => [p.locator('table.data tbody td.url a')] });

    await page.goto(`/settings/webhooks/${ok.endpoint.id}`);
    await page.locator('table.data tbody tr').nth(2).waitFor();
    await expectFits(page, 'webhooks-endpoint', {
      visible: (p) => [p.locator('table.data tbody td:nth-child(2) a'), p.locator('table.data tbody .status'), p.getByRole('button', { name: 'Disable' })],
    });
    // On a desktop the delivery log stays inside the content column.
    const [main, log] = await Promise.all([page.locator('main').boundingBox(), page.locator('#log table.data').boundingBox()]);
    expect(log!.x + log!.width).toBeLessThanOrEqual(main!.x + main!.width);

    await page.locator('table.data tbody td:nth-child(2) a').first().click();
    await page.getByRole('heading', { name: 'Attempts' }).waitFor();
    await expectFits(page, 'webhooks-delivery', {
      screenshot: 'webhooks-delivery',
      visible: (p) => [p.getByRole('button', { name: 'Resend' }), p.locator('table.data tbody tr td:first-child')],
    });

    await page.goto('/settings/mailboxes');
    await expectFits(page, 'mailboxes', {
      screenshot: 'mailboxes',
      visible: (p) => [p.locator('table.data tbody th[scope="row"]'), p.locator('table.data tbody').getByRole('link', { name: /^Connect/ })],
    });

    // Send policies: an org policy with quiet hours and lists, and an override on the long-named key.
    await b.app.admin
      .put(`/admin/orgs/${owner.orgId}/send-policy`, {
        maxPerHour: 60,
        maxPerDay: 500,
        maxPerRecipientPerDay: 5,
        quietStart: '21:00',
        quietEnd: '08:00',
        timeZone: 'America/New_York',
        allowList: ['+1415', '+1628', 'reservations.example.org'],
        denyList: ['+1900', 'complaints@reservations.example.org'],
      })
      .expect(200);
    await b.app.admin.put(`/admin/orgs/${owner.orgId}/send-policy/credentials/${owner.apiKeyId}`, { maxPerHour: 10, repliesOnly: true }).expect(200);
    await page.goto('/settings/send-policies');
    await expectFits(page, 'send-policies', {
      screenshot: 'send-policies',
      visible: (p) => [
        p.getByRole('button', { name: 'Save policy' }),
        p.locator('table.data tbody th[scope="row"]'),
        p.locator('table.data tbody').getByRole('link', { name: /^(Change|Override)/ }),
      ],
    });
    await page.goto(`/settings/send-policies/credentials/${owner.apiKeyId}`);
    await expectFits(page, 'send-policies-credential', {
      visible: (p) => [p.getByRole('button', { name: 'Save override' }), p.getByRole('button', { name: 'Remove override' })],
    });
    await page.goto('/settings/sms-opt-out');
    await expectFits(page, 'sms-opt-out', { visible: (p) => [p.getByLabel('HELP text'), p.getByRole('button', { name: 'Save HELP text' })] });

    await page.getByRole('link', { name: 'Outbox (development)' }).click();
    await page.waitForURL('**/dev/outbox');
    await expectFits(page, 'dev-outbox', {
      screenshot: 'dev-outbox',
      visible: (p) => [p.locator('table.data tbody .outbox-body'), p.locator('table.data tbody td[data-label="Status"]')],
    });

    const missing = await page.goto(`/settings/webhooks/${randomUUID()}`);
    expect(missing?.status()).toBe(404);
    await expectFits(page, 'error-not-found', { screenshot: 'error-not-found', visible: (p) => [p.getByRole('link', { name: 'Back to the start' })] });
  });

  it('the navigation is one line on a phone: a Menu that opens on the links, the account and Sign out', async () => {
    const page = b.page;
    const owner = await createSession(b.app.admin, { role: 'MEMBER', lines: ['PHONE_NUMBER'] });
    await signInAs(b.app, page, owner.userId);
    await page.setViewportSize(PHONE);
    const header = (await page.locator('header.site-header').boundingBox())!;
    expect(header.height).toBeLessThan(64);
    expect(await page.getByRole('link', { name: 'Webhooks' }).isVisible()).toBe(false);
    await page.getByText('Menu', { exact: true }).click();
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.waitForURL('**/settings/webhooks');
    await page.setViewportSize(VIEWPORT);
    // On a desktop the links show at once, no Menu.
    expect(await page.getByRole('link', { name: 'Approvals' }).isVisible()).toBe(true);
    expect(await page.getByText('Menu', { exact: true }).isVisible()).toBe(false);
  });
});
