import { randomUUID } from 'node:crypto';
import type { Page } from 'playwright-core';
import { deliveryEnv } from '../support/delivery';
import { TestReceiver } from '../support/receiver';
import { createSession, Session, uniquePhone } from '../support/session';
import { INGEST_TOKEN } from '../support/test-env';
import { verifyWebhookRequest } from '../../src/sdk';
import { expectAccessible, PHONE_VIEWPORT, screenshot, useBrowser, VIEWPORT } from './support/browser';

jest.setTimeout(120_000);

/**
 * Settings → Webhooks in chromium, against a real receiver: the app runs in development with
 * loopback receivers allowed (deliveryEnv) and a short retry schedule, so a failing window fails
 * within a second or two.
 */
describe('webhooks pages in a browser', () => {
  const b = useBrowser({ app: { env: deliveryEnv('web-hooks-browser', { DELIVERY_RETRY_SCHEDULE: '200ms,200ms' }) } });
  const receiver = new TestReceiver();
  let receiverUrl: string;

  beforeAll(async () => {
    receiverUrl = await receiver.start();
  });
  afterAll(async () => {
    await receiver.stop();
  });

  async function signIn(page: Page): Promise<Session> {
    const session = await createSession(b.app.admin, { lines: ['PHONE_NUMBER'] });
    const link = await b.app.admin.post(`/admin/users/${session.userId}/sign-in-links`).expect(201);
    await page.goto(new URL(link.body.url).pathname + new URL(link.body.url).search);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL('**/conversations');
    return session;
  }

  async function inboundSms(session: Session): Promise<void> {
    await b.app
      .http()
      .post('/ingest/sms/inbound')
      .set('Authorization', `Bearer ${INGEST_TOKEN}`)
      .send({ to: session.lines[0].address, from: uniquePhone(), body: 'Is the table for two still free?', providerMessageId: `p-${randomUUID()}` })
      .expect(201);
  }

  /** Reloads the page until the log shows a delivery in `status` (bounded). */
  async function reloadUntilLogShows(page: Page, status: string, count = 1): Promise<void> {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const seen = await page.locator('table.data tbody td span.status', { hasText: new RegExp(`^${status}$`) }).count();
      if (seen >= count) return;
      if (Date.now() > deadline) throw new Error(`the delivery log did not show ${count} ${status} deliveries in time`);
      await page.waitForTimeout(250);
      await page.reload();
    }
  }

  async function addEndpoint(page: Page, path: string): Promise<string> {
    await page.goto('/settings/webhooks');
    await page.getByRole('link', { name: 'Add endpoint' }).click();
    await page.getByLabel('URL').fill(`${receiverUrl}${path}`);
    await page.getByLabel('message.received').check();
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    const secret = await page.getByLabel('Signing secret').inputValue();
    expect(secret).toMatch(/^[0-9a-f]{64}$/);
    return secret;
  }

  const requestsTo = (path: string) => receiver.requests.filter((r) => r.url === path);

  it('add → an SMS is delivered → resend → rotate → disable / enable → delete, every page accessible', async () => {
    const page = b.page;
    await b.context.grantPermissions(['clipboard-read', 'clipboard-write']);
    const session = await signIn(page);

    await page.getByRole('link', { name: 'Webhooks' }).click();
    await expect(page.getByRole('heading', { level: 1, name: 'Webhooks' }).isVisible()).resolves.toBe(true);
    await expect(page.getByText('You have no webhook endpoints yet.').isVisible()).resolves.toBe(true);

    await page.getByRole('link', { name: 'Add endpoint' }).click();
    await expectAccessible(page, 'add endpoint');
    await page.getByLabel('URL').fill(`${receiverUrl}/main`);
    await page.getByLabel('message.received').check();
    await page.getByLabel('Verbose').check();
    await page.getByLabel('Message history').fill('5');
    await page.getByLabel(session.lines[0].address).check();
    await page.getByLabel('Only these lines:').check();
    await page.getByLabel('v1a: ed25519, verified with a public key').check();
    await page.getByLabel('Also send the legacy X-Service-Signature header').uncheck();
    await screenshot(page, 'webhooks-new');
    await screenshot(page, 'webhooks-new-phone', { viewport: PHONE_VIEWPORT });
    await expectAccessible(page, 'add endpoint at phone width');
    await page.setViewportSize(VIEWPORT);
    await page.getByRole('button', { name: 'Add endpoint' }).click();

    const secret = await page.getByLabel('Signing secret').inputValue();
    expect(secret).toMatch(/^[0-9a-f]{64}$/);
    expect(page.url()).not.toContain(secret);
    await page.locator('button[data-copy="secret"]').click();
    await page.getByText('Copied').waitFor();
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(secret);
    await expect(page.getByLabel('The same secret for Standard Webhooks libraries').inputValue()).resolves.toBe(
      `whsec_${Buffer.from(secret, 'utf8').toString('base64')}`,
    );
    const publicKey = await page.getByLabel('Public key (v1a)').inputValue();
    expect(publicKey).toMatch(/^whpk_[A-Za-z0-9+/]{43}=$/);
    await expectAccessible(page, 'secret shown once');
    await page.getByRole('link', { name: 'Open the endpoint' }).click();

    await inboundSms(session);
    await reloadUntilLogShows(page, 'succeeded');
    const first = requestsTo('/main')[0];
    expect(first.headers['x-service-event-type']).toBe('message.received');
    // Signed as the form asked: v1a entries only, verified with the public key the page showed; no legacy header.
    expect(first.headers['x-service-signature']).toBeUndefined();
    expect(first.headers['webhook-signature']).toMatch(/^v1a,/);
    expect(verifyWebhookRequest(first.body, first.headers as Record<string, string>, [publicKey]).version).toBe('v1a');
    expect(await page.getByLabel('Public key (v1a)').inputValue()).toBe(publicKey);
    expect(await page.locator('dl').textContent()).toContain('v1a (ed25519), legacy X-Service-Signature off');
    // The log row, read by its column headings as a person reads it.
    const headings = await page.locator('table.data thead th').allTextContents();
    const cells = await page.locator('table.data tbody tr').first().locator('td').allTextContents();
    const logRow = Object.fromEntries(headings.map((heading, i) => [heading, cells[i]]));
    expect(logRow).toEqual({
      'Event kind': 'message.received',
      'Event id': first.headers['x-service-event-id'],
      Status: 'succeeded',
      Attempts: '1',
      'Last HTTP status': '200',
      Duration: expect.stringMatching(/^\d+ ms$/),
      'Next retry': '—',
    });
    await expectAccessible(page, 'endpoint');
    await screenshot(page, 'webhooks-endpoint');
    await screenshot(page, 'webhooks-endpoint-phone', { viewport: PHONE_VIEWPORT });
    await expectAccessible(page, 'endpoint at phone width');
    await page.setViewportSize(VIEWPORT);

    await page.getByRole('link', { name: String(first.headers['x-service-event-id']) }).click();
    await page.getByRole('heading', { name: 'Payload' }).waitFor();
    expect(await page.locator('pre.payload').textContent()).toContain('"type": "message.received"');
    await expectAccessible(page, 'delivery');
    await screenshot(page, 'webhooks-delivery');

    await page.getByRole('button', { name: 'Resend' }).click();
    await page.getByText('The delivery was sent again as this new delivery.').waitFor();
    await receiver.waitFor(receiver.requests.indexOf(first) + 2);
    const resent = requestsTo('/main')[1];
    expect(resent.headers['x-service-event-id']).toMatch(/^evt_[0-9a-f]{32}$/);
    expect(resent.headers['x-service-event-id']).not.toBe(first.headers['x-service-event-id']);
    await page.getByRole('link', { name: 'the original delivery' }).waitFor();

    await page.getByRole('link', { name: 'Webhooks' }).first().click();
    await page.getByRole('table', { name: 'Your webhook endpoints' }).waitFor();
    await expectAccessible(page, 'webhooks list');
    await screenshot(page, 'webhooks');

    await page.getByRole('link', { name: `${receiverUrl}/main` }).click();
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    const rotated = await page.getByLabel('Signing secret').inputValue();
    expect(rotated).toMatch(/^[0-9a-f]{64}$/);
    expect(rotated).not.toBe(secret);
    await page.getByText('The previous secret keeps signing deliveries').waitFor();
    const rotatedKey = await page.getByLabel('Public key (v1a)').inputValue();
    expect(rotatedKey).not.toBe(publicKey);
    await expectAccessible(page, 'new signing secret');
    await screenshot(page, 'webhooks-rotated');
    await screenshot(page, 'webhooks-rotated-phone', { viewport: PHONE_VIEWPORT });
    await page.setViewportSize(VIEWPORT);
    await page.getByRole('link', { name: 'Open the endpoint' }).click();

    await page.getByRole('link', { name: 'Edit', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Edit endpoint' }).waitFor();
    await expectAccessible(page, 'edit endpoint');
    await screenshot(page, 'webhooks-edit');
    await screenshot(page, 'webhooks-edit-phone', { viewport: PHONE_VIEWPORT });
    await page.setViewportSize(VIEWPORT);
    expect(await page.getByLabel('v1a: ed25519, verified with a public key').isChecked()).toBe(true);
    await page.getByLabel('Concise').check();
    await page.getByLabel('v1: HMAC-SHA256 with the signing secret').check();
    await page.getByLabel('Also send the legacy X-Service-Signature header').check();
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('heading', { level: 2, name: 'Delivery log' }).waitFor();
    expect(await page.locator('dl').textContent()).toContain('concise');
    expect(await page.locator('dl').textContent()).toContain('v1 (HMAC-SHA256), and the legacy X-Service-Signature');
    expect(await page.getByLabel('Public key (v1a)').count()).toBe(0);

    await page.getByRole('button', { name: 'Disable' }).click();
    await page.getByText('The endpoint is disabled').waitFor();
    await page.getByRole('button', { name: 'Enable' }).click();
    await page.getByText('The endpoint is enabled again.').waitFor();

    await page.getByRole('link', { name: 'Delete' }).click();
    await page.getByRole('heading', { name: 'Delete endpoint' }).waitFor();
    await expectAccessible(page, 'delete confirmation');
    await screenshot(page, 'webhooks-delete');
    await page.getByRole('button', { name: 'Delete endpoint' }).click();
    await page.getByText('The endpoint was deleted.').waitFor();
    await expect(page.getByText('You have no webhook endpoints yet.').isVisible()).resolves.toBe(true);
  });

  it('error pages: an unknown endpoint is a 404 page, a form with a stale CSRF token a 403 page; both accessible', async () => {
    const page = b.page;
    b.problems.allow(/\b(403|404)\b/); // the answers this test asks for
    await signIn(page);
    const unknown = await page.goto('/settings/webhooks/00000000-0000-4000-8000-000000000000');
    expect(unknown?.status()).toBe(404);
    await page.getByRole('heading', { level: 1, name: 'Not found' }).waitFor();
    expect(await page.getByText('webhook endpoint').count()).toBeGreaterThan(0); // the page says what was not found
    await expectAccessible(page, 'not found page');
    await screenshot(page, 'error-not-found');

    await addEndpoint(page, '/stale');
    await page.getByRole('link', { name: 'Open the endpoint' }).click();
    // A token from another session (a tab left open across a sign-out and back in).
    await page.evaluate(`document.querySelector('form[action$="/disable"] input[name="_csrf"]').value = '${'a'.repeat(43)}'`);
    const [refused] = await Promise.all([page.waitForResponse((r) => r.url().endsWith('/disable')), page.getByRole('button', { name: 'Disable' }).click()]);
    expect(refused.status()).toBe(403);
    await page.getByRole('heading', { level: 1, name: 'Not allowed' }).waitFor();
    await page.getByText('The form is missing its CSRF token or carries a wrong one: reload the page and try again.').waitFor();
    await expectAccessible(page, 'forbidden page');
    await screenshot(page, 'error-forbidden');
    await page.goto('/settings/webhooks');
    expect(await page.getByRole('table', { name: 'Your webhook endpoints' }).textContent()).toContain('Active'); // not disabled
  });

  it('recover: deliveries that failed while the receiver answered 500 arrive after Recover', async () => {
    const page = b.page;
    const session = await signIn(page);
    let healthy = false;
    receiver.respond = (req) => (req.url === '/recover' && !healthy ? { status: 500, body: 'down for maintenance' } : { status: 200, body: 'ok' });
    const start = new Date(Date.now() - 60_000);
    await addEndpoint(page, '/recover');
    await page.getByRole('link', { name: 'Open the endpoint' }).click();

    await inboundSms(session);
    await inboundSms(session);
    await reloadUntilLogShows(page, 'failed', 2);
    expect(requestsTo('/recover')).toHaveLength(6); // 1 + 2 retries each, all answered 500

    healthy = true;
    await page.getByLabel('Since').fill(start.toISOString().slice(0, 19));
    await page.getByRole('button', { name: 'Recover' }).click();
    await page.getByText('2 deliveries queued.').waitFor();
    await reloadUntilLogShows(page, 'succeeded', 2);
    expect(requestsTo('/recover')).toHaveLength(8);
    receiver.respond = () => ({ status: 200, body: 'ok' });
  });
});
