import { simpleParser } from 'mailparser';
import { EndpointHealthMonitor } from '../../src/webhooks/endpoint-health.monitor';
import { WebhooksService } from '../../src/webhooks/webhooks.service';
import { fixtureEvent } from '../fixtures/events';
import { closeDeliveryTestApp, createDeliveryTestApp, DeliveryTestApp, deleteRegisteredEndpoints, publish, register, waitForStatus } from '../support/delivery';
import { toolOk } from '../support/mcp';
import { TestReceiver } from '../support/receiver';
import { createSession, Session } from '../support/session';
import { CapturingMailServer, startCapturingSmtp } from '../support/smtp';
import { waitUntil } from '../support/wait';

const HOUR = 3_600_000;
const PUBLIC_BASE_URL = 'https://sync.example.com';

/**
 * A worker's timer (ENDPOINT_HEALTH_INTERVAL_MS, 200 ms here) disables an endpoint whose failing
 * run has lasted 24 hours although no attempt fails any more, and emails its owner through
 * SMTP_URL: once when the service disabled the endpoint, once per failing run after an hour.
 * Failing runs are set in the database (hours cannot pass in a test); ends of runs go through
 * the same path a 2xx takes.
 */
jest.setTimeout(30_000);

describe("telling an endpoint's owner", () => {
  let t: DeliveryTestApp;
  let s: Session;
  let smtp: CapturingMailServer;
  const receiver = new TestReceiver();
  let base: string;

  beforeAll(async () => {
    base = await receiver.start();
    smtp = await startCapturingSmtp();
    t = await createDeliveryTestApp({
      queueTag: 'endpoint-health',
      env: { SMTP_URL: `smtp://127.0.0.1:${smtp.port}`, ENDPOINT_HEALTH_INTERVAL_MS: '200', PUBLIC_BASE_URL },
    });
    s = await createSession(t.admin, { tier: 'POWER' });
  });
  afterAll(async () => {
    await closeDeliveryTestApp(t);
    await smtp.close();
    await receiver.stop();
  });
  afterEach(() => deleteRegisteredEndpoints(t));

  /** The emails about one endpoint (its URL is unique to the test), parsed. */
  async function emailsAbout(url: string) {
    const parsed = await Promise.all(smtp.mails.map((raw) => simpleParser(raw)));
    return parsed.filter((mail) => mail.subject?.endsWith(url));
  }

  /**
   * Waits until the monitor has run `count` whole checks that started after this call: what a
   * check would have sent by then, it has sent (a sentinel for "nothing was sent", where a fixed
   * sleep holds fewer checks on a busy machine).
   */
  async function checksRun(count: number): Promise<void> {
    const monitor = t.app.get(EndpointHealthMonitor);
    const check = monitor.check.bind(monitor);
    let done = 0;
    const spy = jest.spyOn(monitor, 'check').mockImplementation(async () => {
      const outcome = await check();
      done += 1;
      return outcome;
    });
    try {
      await waitUntil(() => done >= count, `${count} endpoint health checks`);
    } finally {
      spy.mockRestore();
    }
  }

  async function failingFor(endpointId: string, ms: number, failures: number): Promise<Date> {
    const since = new Date(Date.now() - ms);
    await t.db.query(`UPDATE webhook_endpoints SET failing_since = $2, consecutive_failures = $3 WHERE id = $1`, [endpointId, since, failures]);
    return since;
  }

  it('emails the owner once when an endpoint has been failing for an hour, and again only in a new failing run', async () => {
    const url = `${base}/failing-hour`;
    const { endpoint } = await register(t, s.apiKey, { url, events: ['contact.merged'] });
    await failingFor(endpoint.id, 30 * 60_000, 3);
    await checksRun(3); // half an hour is not an hour
    expect(await emailsAbout(url)).toHaveLength(0);

    const since = await failingFor(endpoint.id, 2 * HOUR, 7);
    await waitUntil(async () => (await emailsAbout(url)).length === 1, 'the failing email');
    const [mail] = await emailsAbout(url);
    expect(mail.to).toMatchObject({ text: s.email });
    expect(mail.from?.value).toEqual([{ name: 'Messaging Sync', address: 'no-reply@sync.example.com' }]);
    expect(mail.subject).toBe(`Webhook endpoint failing for an hour: ${url}`);
    expect(mail.text).toContain(`have been failing since ${since.toISOString()}`);
    expect(mail.text).toContain('(7 failed attempts in a row)');
    expect(mail.text).toContain(`${PUBLIC_BASE_URL}/settings/webhooks/${endpoint.id}`);
    await checksRun(3);
    expect(await emailsAbout(url)).toHaveLength(1); // once per run

    // A 2xx ends the run (the delivery worker's path), and a new run an hour long is told again.
    expect(await t.app.get(WebhooksService).endRunsAnsweredBefore(new Map([[endpoint.id, new Date()]]))).toBe(1);
    const [row] = await t.db.query(`SELECT failing_since, failing_notice_sent_at FROM webhook_endpoints WHERE id = $1`, [endpoint.id]);
    expect(row).toEqual({ failing_since: null, failing_notice_sent_at: null });
    await failingFor(endpoint.id, 90 * 60_000, 12);
    await waitUntil(async () => (await emailsAbout(url)).length === 2, 'the failing email of the new run');
    const [status] = await t.db.query(`SELECT status FROM webhook_endpoints WHERE id = $1`, [endpoint.id]);
    expect(status.status).toBe('active');
  });

  it('disables an endpoint failing for 24 hours on the timer, cancels its waiting deliveries and emails the owner once with the reason', async () => {
    const url = `${base}/failing-day`;
    receiver.respond = (req) => (req.url === '/failing-day' ? { status: 500 } : { status: 200 });
    const { endpoint } = await register(t, s.apiKey, { url, events: ['contact.merged'] });
    await publish(t, fixtureEvent('contact.merged', { orgId: s.orgId, lineId: null }));
    await waitForStatus(t, endpoint.id, ['retrying']);

    const since = await failingFor(endpoint.id, 25 * HOUR, 5);
    await waitUntil(async () => (await emailsAbout(url)).some((m) => m.subject?.startsWith('Webhook endpoint disabled')), 'the disabled email');
    // The notice is sent, then marked sent: wait for the mark, not only for the email.
    await waitUntil(
      async () => !(await t.db.query(`SELECT disabled_notice_due FROM webhook_endpoints WHERE id = $1`, [endpoint.id]))[0].disabled_notice_due,
      'the disabled notice marked sent',
    );
    const [row] = await t.db.query(`SELECT status, disabled_reason, disabled_notice_due FROM webhook_endpoints WHERE id = $1`, [endpoint.id]);
    const reason = `auto-disabled after failing continuously since ${since.toISOString()}`;
    expect(row).toEqual({ status: 'disabled', disabled_reason: reason, disabled_notice_due: false });
    const [delivery] = await t.db.query(`SELECT status FROM webhook_deliveries WHERE endpoint_id = $1`, [endpoint.id]);
    expect(delivery.status).toBe('cancelled');

    const disabled = (await emailsAbout(url)).filter((m) => m.subject === `Webhook endpoint disabled: ${url}`);
    expect(disabled).toHaveLength(1);
    expect(disabled[0].to).toMatchObject({ text: s.email });
    expect(disabled[0].text).toContain(`Messaging Sync disabled your webhook endpoint ${url}:\n${reason}.`);
    expect(disabled[0].text).toContain(`${PUBLIC_BASE_URL}/settings/webhooks/${endpoint.id}`);
    await checksRun(3);
    expect((await emailsAbout(url)).filter((m) => m.subject === `Webhook endpoint disabled: ${url}`)).toHaveLength(1);

    // Enabled again, it starts afresh: nothing due, no run.
    await toolOk(t, s.apiKey, 'update_webhook', { endpointId: endpoint.id, status: 'active' });
    const [enabled] = await t.db.query(`SELECT status, failing_since, failing_notice_sent_at, disabled_notice_due FROM webhook_endpoints WHERE id = $1`, [
      endpoint.id,
    ]);
    expect(enabled).toEqual({ status: 'active', failing_since: null, failing_notice_sent_at: null, disabled_notice_due: false });
  });

  it('sends nothing when the owner disables the endpoint themselves', async () => {
    const url = `${base}/manual-off`;
    const { endpoint } = await register(t, s.apiKey, { url, events: ['contact.merged'] });
    await toolOk(t, s.apiKey, 'update_webhook', { endpointId: endpoint.id, status: 'disabled' });
    await checksRun(3);
    expect(await emailsAbout(url)).toHaveLength(0);
  });
});
