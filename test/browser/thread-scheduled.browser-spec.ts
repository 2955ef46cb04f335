import { randomUUID } from 'node:crypto';
import { toolOk } from '../support/mcp';
import { createSession, uniquePhone } from '../support/session';
import { INGEST_TOKEN, privateQueuePrefix } from '../support/test-env';
import { expectAccessible, PHONE_VIEWPORT, screenshot, signInAs, useBrowser, VIEWPORT } from './support/browser';

/**
 * Issue 45, scheduled sends on the thread page: a reply an agent scheduled (reply_to_thread with
 * sendAt) shows as Scheduled, with its time and a Cancel sending button; pressed, the message is
 * CANCELED and never sent. At 1280 and 375 px (docs/ui/thread-scheduled*.png), nothing wider than the phone.
 */
describe('a scheduled message on the thread page', () => {
  const b = useBrowser({ app: { env: { APP_ENV: 'development', QUEUE_PREFIX: privateQueuePrefix('thread-scheduled') } } });

  it('shows its time and a Cancel button, at desktop and phone width; Cancel cancels it', async () => {
    const page = b.page;
    const session = await createSession(b.app.admin, { lines: ['PHONE_NUMBER'] });
    await signInAs(b.app, page, session.userId);
    const res = await b.app
      .http()
      .post('/ingest/sms/inbound')
      .set('Authorization', `Bearer ${INGEST_TOKEN}`)
      .send({
        to: session.lines[0].address,
        from: uniquePhone(),
        body: 'Can you remind me about my appointment the day before?',
        providerMessageId: `p-${randomUUID()}`,
      })
      .expect(201);
    const threadId = res.body.threadId as string;
    const sendAt = new Date(Date.now() + 26 * 60 * 60 * 1000);
    sendAt.setUTCMinutes(0, 0, 0);
    const { message } = await toolOk(b.app, session.apiKey, 'reply_to_thread', {
      threadId,
      body: 'Reminder: your appointment is tomorrow at 10:00. Reply C to cancel.',
      sendAt: sendAt.toISOString(),
    });
    expect(message.status).toBe('SCHEDULED');

    await page.goto(`/conversations/${threadId}`);
    const scheduled = page.locator(`#message-${message.id}`);
    await expect(scheduled.locator('.message-status').textContent()).resolves.toBe('Scheduled');
    await expect(scheduled.locator('.scheduled time').getAttribute('datetime')).resolves.toBe(`${sendAt.toISOString().slice(0, 16)}Z`);
    const cancel = scheduled.getByRole('button', { name: 'Cancel sending' });
    await expect(cancel.isVisible()).resolves.toBe(true);
    await expectAccessible(page, 'Thread with a scheduled message');
    await screenshot(page, 'thread-scheduled');
    await screenshot(page, 'thread-scheduled-phone', { viewport: PHONE_VIEWPORT });
    await page.setViewportSize(PHONE_VIEWPORT);
    await expect(page.evaluate(() => document.documentElement.scrollWidth)).resolves.toBeLessThanOrEqual(PHONE_VIEWPORT.width);
    await expect(cancel.isVisible()).resolves.toBe(true);
    await expectAccessible(page, 'Thread with a scheduled message at phone width');
    await page.setViewportSize(VIEWPORT);

    await cancel.click();
    await page.waitForURL(`**/conversations/${threadId}?done=canceled`);
    await page.getByRole('status').filter({ hasText: 'The scheduled message was canceled' }).waitFor();
    await expect(page.locator(`#message-${message.id} .message-status`).textContent()).resolves.toBe('Canceled');
    await expect(page.getByRole('button', { name: 'Cancel sending' }).count()).resolves.toBe(0);
    const got = await toolOk(b.app, session.apiKey, 'get_message', { messageId: message.id });
    expect(got.message.status).toBe('CANCELED');
  });
});
