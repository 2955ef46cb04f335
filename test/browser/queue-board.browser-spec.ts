import { ADMIN_TOKEN } from '../support/test-env';
import { screenshot, useBrowser } from './support/browser';

/**
 * The queue dashboard in a real chromium: the browser asks for Basic credentials (the admin token
 * as password), then the board lists the service's queues and opens one. Its stylesheet links
 * Google Fonts, which this machine cannot reach: answered empty here, so no request fails.
 */
describe('browser: queue dashboard', () => {
  const b = useBrowser({ context: { httpCredentials: { username: 'operator', password: ADMIN_TOKEN } } });

  it('signs in with Basic credentials, lists every queue, opens the delivery queue', async () => {
    const page = b.page;
    await page.route('https://fonts.googleapis.com/**', (route) => route.fulfill({ status: 200, contentType: 'text/css', body: '' }));
    await page.goto('/admin/queues');
    for (const name of ['webhook-delivery', 'outbound-messages', 'attachment-extraction']) {
      await page.getByRole('link', { name }).first().waitFor();
    }
    await screenshot(page, 'queues');
    await page.getByRole('link', { name: 'webhook-delivery' }).first().click();
    await page.waitForURL('**/admin/queues/queue/webhook-delivery**');
    await page.getByRole('heading', { name: 'webhook-delivery' }).first().waitFor();
  });
});
