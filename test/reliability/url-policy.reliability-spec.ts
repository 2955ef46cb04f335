import * as ipaddr from 'ipaddr.js';
import { FORBIDDEN_URLS, ForbiddenUrl, refusedWith } from '../fixtures/forbidden-urls';
import { describeRange, HOST_RESOLVER } from '../../src/outbound-http/url-policy';
import { fixtureEvent } from '../fixtures/events';
import { closeDeliveryTestApp, createDeliveryTestApp, DeliveryTestApp, MutableResolver, publish, register } from '../support/delivery';
import { toolError } from '../support/mcp';
import { createSession, Session } from '../support/session';
import { LoadReceiver } from './support/receiver';
import { fmt, ResultBuilder } from './support/results';
import { waitFor } from './support/stack';

/**
 * A corpus of at least 60 forbidden URL forms (every refused range and numeric trick of
 * docs/webhooks.md "URL rules", plus DNS names resolving to them through the injectable resolver,
 * plus redirect targets): all refused, at registration and at send time.
 *
 * The corpus is test/fixtures/forbidden-urls.ts. The service runs as the local demo
 * does (development: http:// allowed; WEBHOOK_ALLOWED_CIDRS=127.0.0.0/8), with the resolver
 * replaced by one the test steers, and no retries (one attempt per delivery).
 *
 * - Registration: every corpus form this configuration must refuse is refused (the production
 *   configuration is covered form by form by test/webhooks/webhook-url-policy.e2e-spec.ts).
 * - Send time (DNS rebinding): one endpoint per address set of the corpus, registered while its
 *   name resolves to a public address; then the name is switched to the corpus's addresses and an
 *   event is published. Each attempt must be refused (`url_refused`, naming the range) and
 *   nothing may reach the receiver, which listens on the endpoint's port on 127.0.0.1. The cases
 *   the allowlist admits (127.0.0.0/8 and its IPv4-mapped forms) are the control: they must be
 *   sent, proving a wrongly admitted address would have shown up.
 * - Redirects: a receiver answering 301/302/303/307/308 towards each forbidden URL (and towards
 *   itself): the 3xx is the attempt's failure and no Location is followed.
 */
/** The receiver listens on 127.0.0.1 only: the control can arrive only through that address (or its IPv4-mapped form). */
function isReceiverAddress(address: string): boolean {
  try {
    const parsed = ipaddr.process(address);
    return parsed.kind() === 'ipv4' && parsed.toString() === '127.0.0.1';
  } catch {
    return false;
  }
}

describe('reliability: forbidden URL corpus at registration and at send time', () => {
  let t: DeliveryTestApp;
  let s: Session;
  const resolver = new MutableResolver();
  const receiver = new LoadReceiver();
  let port: number;
  const result = new ResultBuilder('url-policy', 'Forbidden URL corpus at registration and at send time');

  beforeAll(async () => {
    await receiver.start();
    port = receiver.port;
    t = await createDeliveryTestApp({
      queueTag: 'relurl',
      env: { APP_ENV: 'development', WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8', DELIVERY_RETRY_SCHEDULE: 'none', DELIVERY_TIMEOUT_MS: '2000' },
      overrides: (b) => b.overrideProvider(HOST_RESOLVER).useValue(resolver),
    });
    s = await createSession(t.admin, { tier: 'POWER' });
    const grant = await t.admin.put(`/admin/orgs/${s.orgId}/endpoint-cap`, { maxEndpointsPerUser: 1000, reason: 'reliability url corpus' });
    expect(grant.status).toBe(200);
    // The corpus's DNS names answer what the corpus says.
    for (const item of FORBIDDEN_URLS) {
      if (item.resolvesTo) resolver.answers.set(new URL(item.url).hostname.toLowerCase().replace(/\.$/, ''), item.resolvesTo);
    }
  });
  afterAll(async () => {
    result.record();
    await closeDeliveryTestApp(t);
    await receiver.stop();
  });

  it('refuses the corpus at registration, at every attempt, and never follows a redirect', async () => {
    result.load = '—';
    result.faults = 'DNS answers switched to forbidden addresses between registration and delivery; 3xx towards forbidden URLs';

    // --- registration ------------------------------------------------------------------------
    const refusable = refusedWith({ allowHttp: true, loopbackAllowed: true });
    const admittedAtRegistration: string[] = [];
    for (const item of refusable) {
      try {
        const message = await toolError(t, s.apiKey, 'register_webhook', { url: item.url, events: ['contact.merged'] });
        expect(message).toMatch(/\burl\b/);
      } catch (error) {
        admittedAtRegistration.push(`${item.url.slice(0, 80)}: ${(error as Error).message.slice(0, 120)}`);
      }
    }
    result.figure('corpus forms (test/fixtures/forbidden-urls.ts)', fmt(FORBIDDEN_URLS.length));
    result.figure(
      'registration: forms refused under development + 127.0.0.0/8',
      `${fmt(refusable.length - admittedAtRegistration.length)} of ${fmt(refusable.length)}`,
    );

    // --- send time ------------------------------------------------------------------------------
    type SendCase = { item: ForbiddenUrl; addresses: string[]; admitted: boolean; host: string; path: string; endpointId?: string };
    const seen = new Set<string>();
    const cases: SendCase[] = [];
    for (const item of FORBIDDEN_URLS) {
      if (item.reason !== 'address' && item.reason !== 'unresolvable') continue;
      const addresses = item.resolvesTo ?? [new URL(item.url).hostname.replace(/^\[|\]$/g, '')];
      const key = addresses.join(',');
      if (seen.has(key)) continue;
      seen.add(key);
      const i = cases.length;
      cases.push({ item, addresses, admitted: item.loopback === true, host: `st${i}.sendtime.test`, path: `/st/${i}` });
    }
    for (const c of cases) {
      resolver.answers.set(c.host, ['93.184.216.34']);
      const { endpoint, secret } = await register(t, s.apiKey, { url: `http://${c.host}:${port}${c.path}`, events: ['contact.merged'] });
      c.endpointId = endpoint.id;
      receiver.secrets.set(c.path, [secret]);
    }

    // --- redirects ----------------------------------------------------------------------------
    // Location must be ASCII: forms with other characters are left out (they are refused at registration).
    const targets = [
      ...new Set([
        ...FORBIDDEN_URLS.map((x) => x.url).filter((u) => /^https?:\/\/[\x21-\x7e]+$/.test(u) && u.length < 300),
        `http://127.0.0.1:${port}/followed`,
      ]),
    ];
    const codes = [301, 302, 303, 307, 308];
    const redirects: Array<{ path: string; location: string; code: number; endpointId: string }> = [];
    resolver.answers.set('redirect.sendtime.test', ['127.0.0.1']);
    for (let i = 0; i < targets.length; i++) {
      const path = `/redirect/${i}`;
      const { endpoint, secret } = await register(t, s.apiKey, { url: `http://redirect.sendtime.test:${port}${path}`, events: ['contact.merged'] });
      receiver.secrets.set(path, [secret]);
      redirects.push({ path, location: targets[i], code: codes[i % codes.length], endpointId: endpoint.id });
    }
    const byPath = new Map(redirects.map((r) => [r.path, r]));
    receiver.answer = (arrival) => {
      const r = byPath.get(arrival.path);
      return r ? { status: r.code, headers: { location: r.location } } : 200;
    };

    // Rebind every send-time name to its forbidden addresses, then one org-wide event fans out to all.
    for (const c of cases) resolver.answers.set(c.host, c.addresses);
    await publish(t, fixtureEvent('contact.merged', { orgId: s.orgId, lineId: null }));
    const endpointIds = [...cases.map((c) => c.endpointId!), ...redirects.map((r) => r.endpointId)];
    type Row = { endpoint_id: string; status: string; last_error: string | null; last_status_code: number | null; attempts: number; kinds: string[] };
    const rows: Row[] = await waitFor(
      async () => {
        const r: Row[] = await t.db.query(
          `SELECT d.endpoint_id, d.status, d.last_error, d.last_status_code,
                (SELECT count(*)::int FROM webhook_delivery_attempt_log a WHERE a.delivery_id = d.id) AS attempts,
                (SELECT array_agg(coalesce(a.error_kind, a.status_code::text)) FROM webhook_delivery_attempt_log a WHERE a.delivery_id = d.id) AS kinds
           FROM webhook_deliveries d WHERE d.endpoint_id = ANY($1::uuid[])`,
          [endpointIds],
        );
        return r.length === endpointIds.length && r.every((row) => row.status === 'failed' || row.status === 'succeeded') && r;
      },
      'every delivery of the corpus endpoints to finish',
      60_000,
      200,
    );
    const byEndpoint = new Map(rows.map((r) => [r.endpoint_id, r]));

    const problems: string[] = [];
    let refusedAtSend = 0;
    let controlsSent = 0;
    for (const c of cases) {
      const row = byEndpoint.get(c.endpointId!)!;
      const arrived = receiver.on(c.path).length;
      const label = `${c.item.url.slice(0, 60)} → [${c.addresses.join(', ')}]`;
      if (c.admitted) {
        // The control: the allowlist admits it, so it must not be refused; when every address is loopback it arrives.
        const reachable = c.addresses.every(isReceiverAddress);
        if (row.kinds?.includes('url_refused')) problems.push(`control refused: ${label}`);
        if (reachable && (arrived !== 1 || row.status !== 'succeeded'))
          problems.push(`control not delivered: ${label} (${row.status}, ${arrived} requests, ${row.last_error})`);
        if (reachable && arrived === 1) controlsSent += 1;
        continue;
      }
      const range = c.item.range ? describeRange(c.item.range) : 'does not resolve';
      if (arrived > 0) problems.push(`SENT to a forbidden address: ${label}`);
      else if (row.status !== 'failed' || row.attempts !== 1 || row.kinds?.[0] !== 'url_refused')
        problems.push(`not refused: ${label}: ${row.status} ${row.kinds} ${row.last_error}`);
      else if (!row.last_error?.includes(range)) problems.push(`refused without naming "${range}": ${label}: ${row.last_error}`);
      else refusedAtSend += 1;
    }
    let redirectsRefused = 0;
    for (const r of redirects) {
      const row = byEndpoint.get(r.endpointId)!;
      if (row.status === 'failed' && row.last_status_code === r.code && receiver.on(r.path).length === 1) redirectsRefused += 1;
      else
        problems.push(
          `redirect ${r.code} → ${r.location.slice(0, 60)}: ${row.status} ${row.last_status_code} ${row.last_error} (${receiver.on(r.path).length} requests)`,
        );
    }
    const followed = receiver.on('/followed').length;
    if (followed) problems.push(`a redirect was followed to /followed (${followed} requests)`);
    const refusedCases = cases.filter((c) => !c.admitted).length;
    result.figure(
      'send time: address sets refused (DNS rebinding after registration)',
      `${fmt(refusedAtSend)} of ${fmt(refusedCases)}, each url_refused naming its range, nothing sent`,
    );
    result.figure(
      'send time: allowlisted controls (127.0.0.0/8 forms) sent',
      `${fmt(controlsSent)} of ${fmt(cases.filter((c) => c.admitted).length)} arrived (the others are admitted and attempted, but at an address the receiver does not listen on: 127.255.255.254, or a public address listed first)`,
    );
    result.figure(
      'redirects (301/302/303/307/308) towards forbidden URLs',
      `${fmt(redirectsRefused)} of ${fmt(redirects.length)} recorded as failed attempts, none followed`,
    );
    result.badInputs = `${fmt(refusable.length)} URLs at registration, ${fmt(refusedCases)} rebound address sets at send time, ${fmt(redirects.length)} redirect targets`;
    result.lost = null;
    if (admittedAtRegistration.length) result.notes.push(`admitted at registration: ${admittedAtRegistration.slice(0, 5).join('; ')}`);
    if (problems.length) result.notes.push(`problems: ${problems.slice(0, 8).join('; ')}`);

    expect(admittedAtRegistration).toEqual([]);
    expect(problems).toEqual([]);
    expect(refusedCases).toBeGreaterThanOrEqual(60);
    expect(controlsSent).toBeGreaterThan(0);
    result.passed = true;
  });
});
