import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { createTenant, emailWithPdf, ingestEmail, ingestSms, IngestOutcome, percentile, steadyTraffic, Tenant, toolOk } from './support/clients';
import { startStack, Stack } from './support/fixture';
import { fmt, ResultBuilder } from './support/results';
import { ROOT, sleep, deliveriesAllSucceeded, waitFor } from './support/stack';

/**
 * Issue 6: "Stop Redis for 30 s while events keep arriving through the ingest path: the ingest
 * path keeps answering 2xx, and every event is delivered after Redis returns."
 *
 * A private redis-server (no persistence: it comes back EMPTY, every queued job gone), one `api`
 * and one `worker` process. Inbound SMS arrive at a steady rate, plus an email with a PDF
 * attachment every 5 s (its attachment is queued for extraction in Redis at ingest).
 */
const OUTAGE_MS = Number(process.env.RELIABILITY_REDIS_OUTAGE_MS ?? 30_000);
const SMS_PER_SECOND = 20;
const BEFORE_MS = 5_000;
const AFTER_MS = 5_000;

describe('reliability: Redis stopped for 30 s under traffic', () => {
  let stack: Stack;
  let tenant: Tenant;
  const result = new ResultBuilder('redis-outage', `Redis stopped for ${OUTAGE_MS / 1000} s under traffic`);

  beforeAll(async () => {
    stack = await startStack({ tag: 'redis' });
    tenant = await createTenant(stack.apis[0].baseUrl, { lines: ['PHONE_NUMBER', 'EMAIL_ACCOUNT'] });
  });
  afterAll(async () => {
    result.record();
    await stack?.stop();
  });

  it('keeps answering 2xx on the ingest path and delivers every event once Redis is back', async () => {
    const api = stack.apis[0];
    const { receiver, redis } = stack;
    const { secret } = await toolOk<{ secret: string }>(api.baseUrl, tenant.apiKey, 'register_webhook', {
      url: `${stack.receiverUrl}/outage`,
      events: ['message.received'],
    });
    receiver.secrets.set('/outage', [secret]);
    const phone = tenant.lines.find((l) => l.type === 'PHONE_NUMBER')!.address;
    const inbox = tenant.lines.find((l) => l.type === 'EMAIL_ACCOUNT')!.address;
    const pdf = readFileSync(join(ROOT, 'test/fixtures/emails/invoice-42.pdf'));

    type Tagged = IngestOutcome & { kind: 'sms' | 'email'; sentAt: number; phase: string };
    let phase = 'before';
    const sms = steadyTraffic<Tagged>(SMS_PER_SECOND, async (i) => {
      const sentAt = Date.now();
      const p = phase;
      const o = await ingestSms(api.baseUrl, {
        to: phone,
        from: `+1666${String(2_000_000 + (i % 50)).padStart(7, '0')}`,
        body: `outage sms ${i}`,
        providerMessageId: `outage-${i}`,
      });
      return { ...o, kind: 'sms', sentAt, phase: p };
    });
    const mail = steadyTraffic<Tagged>(0.2, async (i) => {
      const sentAt = Date.now();
      const p = phase;
      const o = await ingestEmail(api.baseUrl, emailWithPdf(inbox, `sender${i}@supplier.example`, pdf, `Invoice ${i}`));
      return { ...o, kind: 'email', sentAt, phase: p };
    });

    await sleep(BEFORE_MS);
    phase = 'during';
    const stoppedAt = Date.now();
    await redis.stop('SIGTERM');
    await sleep(OUTAGE_MS);
    await redis.start();
    const backAt = Date.now();
    phase = 'after';
    await sleep(AFTER_MS);
    const outcomes = [...(await sms.stop()), ...(await mail.stop())];
    const trafficEnded = Date.now();

    const ok = (o: Tagged) => o.status === 200 || o.status === 201;
    const accepted = outcomes.filter(ok);
    const failed = outcomes.filter((o) => !ok(o));
    const during = outcomes.filter((o) => o.phase === 'during');
    const smsMs = outcomes.filter((o) => o.kind === 'sms').map((o) => o.ms);
    const smsDuringMs = during.filter((o) => o.kind === 'sms').map((o) => o.ms);
    const emailMs = (list: Tagged[]) => list.filter((o) => o.kind === 'email').map((o) => o.ms);
    result.load = `${fmt(outcomes.length)} inbound messages at ${SMS_PER_SECOND} SMS/s + 1 email with a PDF every 5 s, 1 api + 1 worker`;
    result.faults = `Redis stopped ${OUTAGE_MS / 1000} s, restarted empty (all queued jobs lost)`;
    result.figure(
      'inbound sent (SMS / emails with a PDF)',
      `${fmt(outcomes.filter((o) => o.kind === 'sms').length)} / ${fmt(outcomes.filter((o) => o.kind === 'email').length)}`,
    );
    result.figure('sent while Redis was down', fmt(during.length));
    result.figure(
      'ingest answers 2xx',
      `${fmt(accepted.length)} of ${fmt(outcomes.length)}${failed.length ? ` (others: ${[...new Set(failed.map((o) => o.status || o.error))].join(', ')})` : ''}`,
    );
    result.figure(
      'SMS ingest latency p50 / p99 / max, whole run',
      `${fmt(percentile(smsMs, 50))} / ${fmt(percentile(smsMs, 99))} / ${fmt(Math.max(...smsMs))} ms`,
    );
    result.figure('SMS ingest latency p99 / max while Redis was down', `${fmt(percentile(smsDuringMs, 99))} / ${fmt(Math.max(0, ...smsDuringMs))} ms`);
    const emailMax = (p: string) => fmt(Math.max(0, ...emailMs(outcomes.filter((o) => o.phase === p))));
    result.figure(
      'email (PDF) ingest latency max: before / during the outage / after Redis restarted',
      `${emailMax('before')} / ${emailMax('during')} / ${emailMax('after')} ms`,
    );
    const slowestEmail = Math.max(0, ...emailMs(during));
    if (slowestEmail > 2_000) {
      result.notes.push(
        `An inbound email with an attachment took up to ${(slowestEmail / 1000).toFixed(1)} s to be answered while Redis was down (an SMS: ` +
          `${fmt(Math.max(0, ...smsDuringMs))} ms): the request waits for the attachment's extraction job to be queued in Redis, ` +
          'which the ioredis client retries before giving up. It still answers 201 and the extraction sweep queues the job later.',
      );
    }
    result.notes.push(
      "An inbound email waits at most 1 s for Redis to take its attachments' extraction jobs (ENQUEUE_WAIT_MS in " +
        'src/attachments/attachment-extraction.service.ts); before that fix such an email took up to 28 s to be answered while Redis was down, and one sent as Redis stopped got no answer within 30 s.',
    );
    const deliveredDuring = receiver.on('/outage').filter((a) => a.at > stoppedAt && a.at < backAt).length;
    result.figure('deliveries that arrived while Redis was down', fmt(deliveredDuring));

    const acceptedIds = new Set(accepted.map((o) => o.messageId!));
    const missing = () => [...acceptedIds].filter((id) => !receiver.messageIds('/outage').has(id));
    try {
      await waitFor(() => missing().length === 0, 'every accepted message at the receiver', 120_000, 250);
    } finally {
      const arrivals = receiver.on('/outage');
      const lastAt = Math.max(...arrivals.map((a) => a.at));
      result.lost = missing().length;
      const duplicates = receiver.duplicates('/outage');
      result.duplicates = `${fmt(duplicates.length)}`;
      result.figure('accepted messages never delivered (lost)', fmt(missing().length));
      result.figure(
        'every event delivered, after Redis returned',
        `${((lastAt - backAt) / 1000).toFixed(1)} s (traffic ran on ${((trafficEnded - backAt) / 1000).toFixed(0)} s after it)`,
      );
      result.figure('signatures verified', `${fmt(arrivals.filter((a) => a.verified).length)} of ${fmt(arrivals.length)}`);
      result.figure('event ids delivered more than once', fmt(duplicates.length));
    }

    expect(failed).toEqual([]);
    expect(missing()).toEqual([]);
    expect(receiver.badSignatures).toBe(0);
    // "No hang": every inbound answer comes well within a provider's webhook timeout, emails with
    // attachments (whose extraction jobs go to Redis) included.
    expect(Math.max(0, ...smsDuringMs)).toBeLessThan(5_000);
    expect(Math.max(0, ...emailMs(outcomes))).toBeLessThan(5_000);

    const db = new Client({ connectionString: stack.databaseUrl });
    await db.connect();
    try {
      const statuses = await deliveriesAllSucceeded(db);
      expect(statuses).toEqual([{ status: 'succeeded', count: accepted.length }]);
      const [{ stuck }] = (await db.query(`SELECT count(*)::int AS stuck FROM attachments WHERE extraction_status = 'extracting'`)).rows;
      result.figure('attachments stuck mid-extraction', fmt(stuck));
    } finally {
      await db.end();
    }
    result.passed = true;
  });
});
