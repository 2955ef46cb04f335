import type { Page } from 'playwright-core';
import { DataSource } from 'typeorm';
import { inboundSms, partnerPhone } from '../support/messaging-hooks';
import { createSession } from '../support/session';
import { privateQueuePrefix } from '../support/test-env';
import { signInAs, useBrowser } from './support/browser';

jest.setTimeout(90_000);

const ZONE = 'Asia/Tokyo';

/**
 * Times in the person's zone (/static/app.js, docs/web.md): a browser in Tokyo reads a recent
 * message's time as "… ago" and an older one as a Tokyo date and time, with the full Tokyo date,
 * time and zone in the title; the server's UTC text is only the fallback. Times that arrive with a
 * live update are rewritten too.
 */
describe('times in the browser’s zone', () => {
  const b = useBrowser({ app: { env: { QUEUE_PREFIX: privateQueuePrefix('local-times') } }, context: { timezoneId: ZONE } });

  const full = new Intl.DateTimeFormat('en-US', { dateStyle: 'full', timeStyle: 'long', timeZone: ZONE });
  /** The text and title of the <time> of the message whose body is `body`. */
  const timeOf = (page: Page, body: string) =>
    page
      .locator('#live-messages li.message')
      .filter({ hasText: body })
      .locator('time')
      .evaluate((time) => ({ text: time.textContent, title: time.getAttribute('title'), iso: time.getAttribute('datetime') as string }));

  it('a thread shows a recent message as relative and an older one as a Tokyo date and time, live ones too', async () => {
    const page = b.page;
    const owner = await createSession(b.app.admin, { lines: ['PHONE_NUMBER'] });
    await signInAs(b.app, page, owner.userId);
    const partner = partnerPhone();
    const old = await inboundSms(b.app, owner.lines[0].address, partner, 'an older message');
    // Three days back: beyond the relative window, and late in a UTC day, so Tokyo's date is another day.
    const threeDaysAgo = new Date(Date.now() - 3 * 24 * 3600_000);
    threeDaysAgo.setUTCHours(22, 30, 0, 0);
    await b.app.app.get(DataSource).query('UPDATE messages SET created_at = $2 WHERE id = $1', [old.messageId, threeDaysAgo]);
    await inboundSms(b.app, owner.lines[0].address, partner, 'a recent message');

    const opened = page.waitForResponse((res) => res.url().includes('/live/events') && res.status() === 200);
    await page.goto(`/conversations/${old.threadId}`);
    await opened;

    const older = await timeOf(page, 'an older message');
    expect(older.iso).toBe(threeDaysAgo.toISOString());
    // 22:30 UTC is 07:30 the next day in Tokyo, written as the server writes UTC.
    expect(older.text).toBe(`${new Date(threeDaysAgo.getTime() + 9 * 3600_000).toISOString().slice(0, 10)} 07:30:00 GMT+9`);
    expect(older.text).not.toContain('UTC');
    expect(older.title).toBe(full.format(threeDaysAgo));
    expect(older.title).toMatch(/GMT\+9$/);

    const recent = await timeOf(page, 'a recent message');
    expect(recent.text).toMatch(/^(now|\d+ seconds? ago|1 minute ago)$/);
    expect(recent.title).toBe(full.format(new Date(recent.iso)));

    await inboundSms(b.app, owner.lines[0].address, partner, 'a live message');
    await page.locator('#live-messages').getByText('a live message').waitFor();
    const live = await timeOf(page, 'a live message');
    expect(live.text).toMatch(/^(now|\d+ seconds? ago|1 minute ago)$/);
    expect(live.title).toBe(full.format(new Date(live.iso)));
  });

  it('a plain time (a key made, to the minute) is a Tokyo date and time too, with the zone named', async () => {
    const page = b.page;
    const owner = await createSession(b.app.admin, { lines: ['PHONE_NUMBER'] });
    await signInAs(b.app, page, owner.userId);
    await page.goto('/settings/api-keys');
    const made = await page
      .locator('td[data-label="Created"] time')
      .first()
      .evaluate((time) => ({ text: time.textContent, iso: time.getAttribute('datetime') as string }));
    const tokyo = new Date(Date.parse(made.iso) + 9 * 3600_000).toISOString();
    expect(made.text).toBe(`${tokyo.slice(0, 10)} ${tokyo.slice(11, 16)} GMT+9`);
  });
});
