import { randomBytes } from 'node:crypto';
import { request } from 'undici';
import { threadEmail } from '../../test/support/thread-email';
import { ServiceApi } from '../lib/api';
import { RunContext, Scenario12Result, startScenarioService } from '../lib/context';
import { fmtMs, log, percentilesOf, sleep } from '../lib/util';

/** The thread: this many emails, the newest ATTACHMENTS of them with a text attachment each. */
const MESSAGES = 50;
const ATTACHMENTS = 20;

/**
 * Scenario 12, the thread page: one person signed in, one email thread of 50 messages whose 20
 * newest carry an attachment each (extracted before timing starts), and the thread page
 * (GET /conversations/:id, the newest 20 messages with their attachments, the partner, labels
 * and drafts) asked for one request at a time: its latency, with nothing else running.
 */
export async function scenario12(ctx: RunContext): Promise<Scenario12Result> {
  const requests = ctx.options.quick ? 100 : 500;
  log(`\nScenario 12: the thread page, ${MESSAGES} messages and ${ATTACHMENTS} attachments, ${requests} requests one at a time`);
  const svc = await startScenarioService(ctx, 's12', {}, 'all');
  const api = new ServiceApi(svc.baseUrl, ctx.secrets.adminToken, ctx.secrets.ingestToken);
  try {
    const org = await api.createOrg('bench s12');
    const line = await api.createEmailLine(org.id, `s12.${randomBytes(4).toString('hex')}@bench.example`);
    const user = await api.createUser(org.id, 's12-u');
    await api.addMember(line.id, user.id);
    const cookie = await api.signInCookie(user.id);

    const partner = `partner.${randomBytes(4).toString('hex')}@bench.example`;
    const root = `<s12-root-${randomBytes(6).toString('hex')}@bench.example>`;
    let threadId = '';
    for (let i = 0; i < MESSAGES; i += 1) {
      const res = await request(`${svc.baseUrl}/ingest/email/inbound`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ctx.secrets.ingestToken}`, 'content-type': 'message/rfc822' },
        body: threadEmail({
          from: partner,
          to: line.address,
          root,
          n: i,
          subject: 'Benchmark thread',
          text: `Message ${i} of the benchmark thread. ${'Some words of a reply. '.repeat(8)}`,
          ...(i >= MESSAGES - ATTACHMENTS && {
            attachment: { filename: `notes-${i}.txt`, text: `The notes of message ${i}. ${'A line of the attached notes. '.repeat(20)}` },
          }),
        }),
      });
      const text = await res.body.text();
      if (res.statusCode !== 201) throw new Error(`email ingest answered ${res.statusCode}: ${text.slice(0, 200)}`);
      threadId = (JSON.parse(text) as { threadId: string }).threadId;
    }
    const page = async () => {
      const res = await request(`${svc.baseUrl}/conversations/${threadId}`, { headers: { cookie } });
      const html = await res.body.text();
      if (res.statusCode !== 200) throw new Error(`the thread page answered ${res.statusCode}`);
      return html;
    };
    // Timed once every attachment's text is extracted (the page shows it), so every request reads the same.
    const deadline = Date.now() + 60_000;
    while (((await page()).match(/<summary>Text of /g) ?? []).length < ATTACHMENTS) {
      if (Date.now() > deadline) throw new Error('the attachments were not extracted within 60 s');
      await sleep(250);
    }
    for (let i = 0; i < 20; i += 1) await page();
    const durations: number[] = [];
    for (let i = 0; i < requests; i += 1) {
      const start = performance.now();
      await page();
      durations.push(performance.now() - start);
    }
    const latency = percentilesOf(durations);
    const mean = durations.reduce((sum, d) => sum + d, 0) / durations.length;
    log(`  S12: thread page p50 ${fmtMs(latency.p50)} p95 ${fmtMs(latency.p95)} p99 ${fmtMs(latency.p99)} mean ${fmtMs(mean)} (${requests} requests)`);
    return { messages: MESSAGES, attachments: ATTACHMENTS, requests, latency, mean };
  } finally {
    await api.close().catch(() => undefined);
    await svc.stop();
  }
}
