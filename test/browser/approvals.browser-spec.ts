import { randomUUID } from 'node:crypto';
import type { Page } from 'playwright-core';
import { DataSource } from 'typeorm';
import { verifyWebhook, WebhookEnvelope } from '../../src/sdk';
import { deliveryEnv } from '../support/delivery';
import { inboundSms } from '../support/messaging-hooks';
import { toolOk } from '../support/mcp';
import { TestReceiver } from '../support/receiver';
import { createSession, Session, uniquePhone } from '../support/session';
import { waitUntil } from '../support/wait';
import { expectAccessible, PHONE_VIEWPORT, screenshot, useBrowser } from './support/browser';

jest.setTimeout(120_000);

interface AgentTurnEvent {
  agentTurn: { id: string; status: string; threadId: string; messageId: string | null; agent: { name: string; mode: string } };
}

/**
 * Approvals in chromium: a DRAFT agent's reply waits on the page; Edit and approve sends what the
 * person typed to the carrier (a real HTTP stand-in) and raises agent_turn.sent, delivered signed
 * to a real webhook receiver; Reject sends nothing; a draft someone else decided first is refused
 * with a page saying so.
 */
describe('Approvals in a browser', () => {
  const carrier = new TestReceiver();
  const hooks = new TestReceiver();
  const env = deliveryEnv('web-approvals-browser');
  // Started before the app (hooks run in order), so the app's carrier URL points at it.
  beforeAll(async () => {
    carrier.respond = () => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ providerMessageId: `prov-${randomUUID()}` }),
    });
    env.SMS_CARRIER_URL = `${await carrier.start()}/sms`;
  });
  const b = useBrowser({ app: { env } });
  let hooksUrl: string;

  beforeAll(async () => {
    hooksUrl = await hooks.start();
  });
  afterAll(async () => {
    await Promise.all([carrier.stop(), hooks.stop()]);
  });

  interface Scene {
    session: Session;
    agentId: string;
    threadId: string;
    partner: string;
  }

  /** An owner signed in to the page, a DRAFT agent on their phone line, and a thread an inbound SMS opened. */
  async function signIn(page: Page, inbound = 'Is the table for two still free?'): Promise<Scene> {
    const session = await createSession(b.app.admin, { lines: ['PHONE_NUMBER'] });
    const agentId = (await b.app.admin.post(`/admin/lines/${session.lines[0].id}/agents`, { name: 'Front desk', mode: 'DRAFT' }).expect(201)).body.id;
    const partner = uniquePhone();
    const { threadId } = await inboundSms(b.app, session.lines[0].address, partner, inbound);
    const link = await b.app.admin.post(`/admin/users/${session.userId}/sign-in-links`).expect(201);
    await page.goto(new URL(link.body.url).pathname + new URL(link.body.url).search);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL('**/conversations');
    return { session, agentId, threadId, partner };
  }

  /** The agent runtime drafts a reply through the REST route. */
  async function draft(scene: Scene, body: string): Promise<string> {
    const res = await b.app
      .http()
      .post(`/api/agents/${scene.agentId}/turns`)
      .set('Authorization', `Bearer ${scene.session.apiKey}`)
      .send({ threadId: scene.threadId, body })
      .expect(201);
    return res.body.turn.id;
  }

  const carried = () => carrier.requests.map((r) => JSON.parse(r.body) as { to: string; body: string });
  const carrierGot = (body: string) => waitUntil(() => carried().find((c) => c.body === body), `the carrier to receive "${body}"`, { timeoutMs: 20_000 });
  /** The draft's card on the page, found by its text. */
  const card = (page: Page, text: string) => page.locator('article.approval', { hasText: text });

  it('a DRAFT turn appears; Edit and approve sends the edited body and agent_turn.sent reaches a signed webhook; all accessible', async () => {
    const page = b.page;
    const scene = await signIn(page, 'Hi <script>alert("inbound")</script>, table for two?');
    const { secret } = await toolOk<{ secret: string }>(b.app, scene.session.apiKey, 'register_webhook', {
      url: `${hooksUrl}/agent`,
      events: ['agent_turn.sent'],
      mode: 'concise',
    });
    const written = 'Yes <script>alert("draft")</script> we have a table at 7pm.';
    const turnId = await draft(scene, written);

    await page.getByRole('link', { name: 'Approvals' }).click();
    await page.getByRole('heading', { level: 1, name: 'Approvals' }).waitFor();
    const item = card(page, written);
    await item.getByRole('heading', { level: 2, name: scene.partner }).waitFor();
    // Sender-controlled text is shown as text, never run.
    await item.getByText('Hi <script>alert("inbound")</script>, table for two?').waitFor();
    await expect(item.getByRole('region', { name: `Draft reply to ${scene.partner}` }).textContent()).resolves.toBe(written);
    await expect(item.getByRole('link', { name: /Open the conversation/ }).getAttribute('href')).resolves.toBe(`/conversations/${scene.threadId}`);
    await expectAccessible(page, 'approvals');
    await screenshot(page, 'approvals');
    await screenshot(page, 'approvals-phone', { viewport: PHONE_VIEWPORT });
    await expectAccessible(page, 'approvals at phone width');

    await item.getByRole('link', { name: 'Edit and approve' }).click();
    await page.getByRole('heading', { level: 1, name: 'Edit and approve' }).waitFor();
    const box = page.getByLabel('Reply to send');
    await expect(box.inputValue()).resolves.toBe(written);
    const edited = `Edited by a person: 8pm suits better.\nSee you then! ${randomUUID().slice(0, 8)}`;
    await box.fill(edited);
    await expectAccessible(page, 'edit and approve');
    await screenshot(page, 'approvals-edit');
    await screenshot(page, 'approvals-edit-phone', { viewport: PHONE_VIEWPORT });
    await page.getByRole('button', { name: 'Approve and send' }).click();
    await page.getByText('Your edited reply was approved and is on its way.').waitFor();
    await page.getByText('No drafts are waiting for approval.').waitFor();

    expect(await carrierGot(edited)).toMatchObject({ to: scene.partner, body: edited });
    expect(carried().map((c) => c.body)).not.toContain(written);
    const delivery = await waitUntil(() => hooks.requests.find((r) => r.url === '/agent'), 'agent_turn.sent at the webhook', { timeoutMs: 20_000 });
    const event = verifyWebhook<AgentTurnEvent>(delivery.body, delivery.headers['x-service-signature'] as string, [secret]) as WebhookEnvelope<AgentTurnEvent>;
    expect(event.type).toBe('agent_turn.sent');
    expect(event.data.agentTurn).toMatchObject({
      id: turnId,
      status: 'SENT',
      threadId: scene.threadId,
      messageId: expect.any(String),
      agent: { name: 'Front desk', mode: 'DRAFT' },
    });
  });

  it('Reject (by keyboard) sends nothing; a draft another person approved first is refused with a page saying so', async () => {
    const page = b.page;
    const scene = await signIn(page);
    const rejected = `We are full tonight ${randomUUID().slice(0, 8)}`;
    await draft(scene, rejected);
    const contested = `Contested reply ${randomUUID().slice(0, 8)}`;
    const contestedId = await draft(scene, contested);

    // This page gets no live updates (as without script), so the colleague's approval below leaves its card in place.
    await page.route('**/live/events**', (route) => route.abort());
    b.problems.allow(/^request failed: GET .*\/live\/events(\?.*)? \(net::ERR_FAILED\)$/);
    b.problems.allow(/^console error: Failed to load resource: net::ERR_FAILED \(.*\/live\/events(\?.*)?:0\)$/);
    await page.goto('/approvals');
    await card(page, rejected).getByRole('button', { name: 'Reject' }).focus();
    await page.keyboard.press('Enter');
    await page.getByText('The draft was rejected: nothing was sent.').waitFor();
    expect(await card(page, rejected).count()).toBe(0);

    // A colleague approves through the API while the page is open; the page's Approve comes second.
    await card(page, contested).waitFor();
    const colleague = await createSession(b.app.admin, { orgId: scene.session.orgId, role: 'MEMBER', lines: [] });
    await b.app.admin.put(`/admin/lines/${scene.session.lines[0].id}/members/${colleague.userId}`).expect(200);
    await b.app.http().post(`/api/agent-turns/${contestedId}/approve`).set('Authorization', `Bearer ${colleague.apiKey}`).send().expect(200);
    b.problems.allow(/\b409\b/); // the refusal this test asks for
    const [answer] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith(`/approvals/${contestedId}/approve`)),
      card(page, contested).getByRole('button', { name: 'Approve' }).click(),
    ]);
    expect(answer.status()).toBe(409);
    await page.getByRole('heading', { level: 1, name: 'This draft was already decided' }).waitFor();
    await page.getByText(`This draft was already approved by Test User (${colleague.email}) at`).waitFor();
    await expectAccessible(page, 'already decided');
    await screenshot(page, 'approvals-conflict');
    await screenshot(page, 'approvals-conflict-phone', { viewport: PHONE_VIEWPORT });

    await carrierGot(contested); // the approved reply arrived once; by then the rejected one would have too
    expect(carried().filter((c) => c.body === contested)).toHaveLength(1);
    expect(carried().map((c) => c.body)).not.toContain(rejected);
    await page.getByRole('link', { name: 'Back to approvals' }).click();
    await page.getByText('No drafts are waiting for approval.').waitFor();
  });

  it('an open Approvals page shows a new draft, and drops one a colleague approved, without a reload', async () => {
    const page = b.page;
    const scene = await signIn(page);
    const first = `First draft ${randomUUID().slice(0, 8)}`;
    const firstId = await draft(scene, first);
    const streamOpen = page.waitForResponse((res) => res.url().includes('/live/events') && res.status() === 200);
    await page.goto('/approvals');
    await card(page, first).waitFor();
    await streamOpen;
    await page.evaluate(() => ((window as unknown as { loadedOnce: boolean }).loadedOnce = true)); // gone if the page reloads

    const second = `Second draft ${randomUUID().slice(0, 8)}`;
    await draft(scene, second);
    await card(page, second).waitFor();
    const colleague = await createSession(b.app.admin, { orgId: scene.session.orgId, role: 'MEMBER', lines: [] });
    await b.app.admin.put(`/admin/lines/${scene.session.lines[0].id}/members/${colleague.userId}`).expect(200);
    await b.app.http().post(`/api/agent-turns/${firstId}/approve`).set('Authorization', `Bearer ${colleague.apiKey}`).send().expect(200);
    // Its reply is now in the thread, so the other card's context shows its text: the card is found by its draft's id.
    await page.locator(`article[aria-labelledby="draft-${firstId}-title"]`).waitFor({ state: 'detached' });
    await card(page, second).waitFor();
    expect(await page.evaluate(() => (window as unknown as { loadedOnce?: boolean }).loadedOnce)).toBe(true);
  });

  it("an open thread shows its agent's new draft without a reload; Approve there (by keyboard) sends it once and returns to the thread", async () => {
    const page = b.page;
    const scene = await signIn(page, 'Could we move to 8:30?');
    const streamOpen = page.waitForResponse((res) => res.url().includes('/live/events') && res.status() === 200);
    await page.goto(`/conversations/${scene.threadId}`);
    await streamOpen;
    const body = `Yes, 8:30 is fine. See you then! ${randomUUID().slice(0, 8)}`;
    const turnId = await draft(scene, body);
    const drafts = page.getByRole('list', { name: 'Waiting for your approval' });
    await drafts.getByText(body).waitFor();
    await page.getByText('Awaiting approval').waitFor();
    await expectAccessible(page, 'Thread with a draft');
    await screenshot(page, 'thread-draft');
    await screenshot(page, 'thread-draft-phone', { viewport: PHONE_VIEWPORT });

    // By keyboard: the first Tab offers to skip the header's links, Enter goes to the page itself.
    await page.locator('body').focus();
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
    await page.keyboard.press('Enter');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('main');
    await drafts.getByRole('button', { name: 'Approve' }).focus();
    await page.keyboard.press('Enter');
    await page.waitForURL(`**/conversations/${scene.threadId}?done=approved`);
    await page.getByText('The reply was approved and is on its way.').waitFor();
    await page.locator('#live-messages li.message', { hasText: body }).waitFor();
    expect(await page.getByRole('heading', { name: 'Waiting for your approval' }).count()).toBe(0);
    await carrierGot(body);
    expect(carried().filter((c) => c.body === body)).toHaveLength(1);
    expect((await b.app.app.get(DataSource).query(`SELECT status FROM agent_turns WHERE id = $1`, [turnId]))[0].status).toBe('SENT');
  });

  it("a draft-only key's send waits on Approvals, named as the key's; Reject with a reason keeps it and sends nothing; at 1280 and 375 px", async () => {
    const page = b.page;
    const scene = await signIn(page, 'Can you hold a table on Friday?');
    const key = (
      await b.app.admin
        .post(`/admin/users/${scene.session.userId}/api-keys`, { name: 'booking assistant', channelAccess: { mode: 'ALL' }, permissions: ['read', 'draft'] })
        .expect(201)
    ).body.key;
    const proposed = 'Friday at 8pm is yours: shall I confirm?';
    const { turn } = await toolOk(b.app, key, 'send_sms', { threadId: scene.threadId, body: proposed });
    expect(turn).toMatchObject({ status: 'AWAITING_APPROVAL', credential: { name: 'booking assistant', kind: 'API_KEY' } });

    await page.getByRole('link', { name: 'Approvals' }).click();
    await page.getByRole('heading', { level: 1, name: 'Approvals' }).waitFor();
    const item = card(page, proposed);
    await item.getByText('drafted by booking assistant (draft-only API key)').waitFor();
    await item.getByLabel('Reason (optional)').fill('Friday is fully booked; offer Monday.');
    await expectAccessible(page, 'approvals with a credential draft');
    await screenshot(page, 'approvals-credential-draft');
    await screenshot(page, 'approvals-credential-draft-phone', { viewport: PHONE_VIEWPORT });
    await item.getByRole('button', { name: 'Reject' }).click();
    await page.waitForURL('**/approvals?done=rejected');
    const seen = await toolOk(b.app, key, 'get_agent_turn', { turnId: turn.id });
    expect(seen.turn).toMatchObject({ status: 'REJECTED', rejectionReason: 'Friday is fully booked; offer Monday.' });
    expect(carried().some((c) => c.body === proposed)).toBe(false);
  });
});
