import { randomUUID } from 'node:crypto';
import { createSession } from '../support/session';
import { INGEST_TOKEN, privateQueuePrefix } from '../support/test-env';
import { expectAccessible, PHONE_VIEWPORT, screenshot, signInAs, useBrowser, VIEWPORT } from './support/browser';

jest.setTimeout(120_000);

/**
 * SMS opt-out in chromium (docs/opt-out.md): a thread whose partner texted STOP says so above its
 * reply form, which is disabled; Settings → SMS opt-out changes the HELP text. Screenshots at
 * 1280 and 375 px (docs/ui/opt-out-*.png).
 */
describe('SMS opt-out in a browser', () => {
  const b = useBrowser({ app: { env: { APP_ENV: 'development', QUEUE_PREFIX: privateQueuePrefix('opt-out-browser') } } });

  async function inboundSms(to: string, from: string, body: string): Promise<string> {
    const res = await b.app
      .http()
      .post('/ingest/sms/inbound')
      .set('Authorization', `Bearer ${INGEST_TOKEN}`)
      .send({ to, from, body, providerMessageId: `p-${randomUUID()}` })
      .expect(201);
    return res.body.threadId;
  }

  it('the thread of a number that texted STOP shows it and its reply form is disabled; the HELP text is set in Settings', async () => {
    const { page } = b;
    const owner = await createSession(b.app.admin, { lines: ['PHONE_NUMBER'] });
    const line = owner.lines[0];
    await signInAs(b.app, page, owner.userId);

    const partner = '+15557654321';
    const threadId = await inboundSms(line.address, partner, 'Do you deliver on Sundays?');
    await inboundSms(line.address, partner, 'STOP');

    await page.goto(`/conversations/${threadId}`);
    const notice = page.locator('#opted-out');
    await notice.waitFor();
    expect(await notice.innerText()).toMatch(new RegExp(`^\\${partner} has opted out\\. They texted STOP to this line on .+, so no SMS can be sent`));
    expect(await page.locator('textarea#body').isDisabled()).toBe(true);
    expect(await page.getByRole('button', { name: 'Send reply' }).isDisabled()).toBe(true);
    // The confirmation the service sent (this line has no provider that answers for it) is on the thread.
    await page.getByText('Reply START to resubscribe.').waitFor();
    await expectAccessible(page, 'opted-out thread');
    await screenshot(page, 'opt-out-thread');
    await screenshot(page, 'opt-out-thread-phone', { viewport: PHONE_VIEWPORT });
    await page.setViewportSize(VIEWPORT);

    await page.getByRole('link', { name: 'SMS opt-out' }).first().click();
    await page.waitForURL('**/settings/sms-opt-out');
    const field = page.getByLabel('HELP text');
    expect(await field.inputValue()).toContain('Reply STOP to stop messages');
    await field.fill('Corner Shop: open 9-6, call +1 555 010 0000. Reply STOP to opt out.');
    await page.getByRole('button', { name: 'Save HELP text' }).click();
    await page.getByText('The HELP text is saved').waitFor();
    expect(await page.getByLabel('HELP text').inputValue()).toBe('Corner Shop: open 9-6, call +1 555 010 0000. Reply STOP to opt out.');
    await expectAccessible(page, 'sms opt-out settings');
    await screenshot(page, 'opt-out-settings');
    await screenshot(page, 'opt-out-settings-phone', { viewport: PHONE_VIEWPORT });
  });
});
