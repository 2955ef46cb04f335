import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { connect, Socket } from 'node:net';
import { gzipSync } from 'node:zlib';
import { Client } from 'pg';
import { SecretBox } from '../../src/common/secret-box';
import { INGEST_TOKEN } from '../support/test-env';
import { twilioSignature } from '../support/twilio';
import { createTenant, rpc, send, Tenant } from './support/clients';
import { startStack, Stack } from './support/fixture';
import { fmt, ResultBuilder } from './support/results';
import { SHARED_SECRETS_KEY, sleep } from './support/stack';

/**
 * Issue 10 §2: "N unauthenticated large or slow bodies in parallel → RSS stays under a stated
 * bound and authorised traffic keeps its latency."
 *
 * One `api` process in production mode (APP_ENV=production, default HTTP limits). Authorised
 * traffic (MCP tools/list and inbound SMS, one after the other) is timed alone, then again while,
 * for ATTACK_MS, these run in parallel and start over whenever they end:
 *   - BIG connections without a token, each sending a 24 MB body to /ingest/email/inbound;
 *   - BOMBS gzip bombs (25 KB inflating to 25 MB) to /ingest/email/inbound, half without a
 *     token, half with the ingest token;
 *   - SLOW_HEADERS connections sending their headers one line a second;
 *   - SLOW_BODIES connections without a token trickling a 24 MB body at 2 KB/s;
 *   - AUTH_SLOW connections WITH the ingest token trickling a 24 MB body (they reserve the body
 *     budget, HTTP_BODY_BUDGET_BYTES, 128 MB: the ones that do not fit get 503).
 * The api process's resident memory (VmRSS, sampled every 100 ms, and VmHWM) must stay within
 * RSS_BOUND_MB of what it was before the attack, and the authorised p99 within P99_BOUND_MS
 * (absolute and generous: the machine is small and shared, and the load generator runs on it).
 *
 * Then (issue 30), for PREAUTH_MS: PREAUTH_IDLE connections from one address (127.0.0.2), each
 * declaring a 64 KiB Twilio form and sending one byte, opened again as soon as they are answered,
 * so the address always holds what it may of the 4 MiB of bodies read before authentication;
 * meanwhile signed Twilio inbounds from 127.0.0.1, one after the other, must all be taken (200)
 * and stored.
 */
const ATTACK_MS = Number(process.env.RELIABILITY_ABUSE_MS ?? 20_000);
const BIG = Number(process.env.RELIABILITY_ABUSE_BIG ?? 90);
const BOMBS = Number(process.env.RELIABILITY_ABUSE_BOMBS ?? 100);
const SLOW_HEADERS = 100;
const SLOW_BODIES = 50;
const AUTH_SLOW = 8;
const BODY_BYTES = 24 * 1024 * 1024;
/**
 * Stated bounds: the peak resident memory over the pre-attack level, and the authorised p99 under
 * attack. What the service may hold by design is the authenticated bodies' budget
 * (HTTP_BODY_BUDGET_BYTES, 128 MiB by default, which AUTH_SLOW fill) and the 4 MiB of bodies read
 * before authentication; the rest is what a Node process's heap and allocator keep between
 * collections while thousands of connections come and go, 64 MB here. Measured growth: 114 to 164
 * MB (the bound was 150 MB before, and a CI run on a busy machine reached 164); buffering the
 * unauthenticated bodies would be gigabytes.
 */
const RSS_BOUND_MB = 128 + 4 + 64;
/** Generous: the load generator, PostgreSQL and other work share a small machine with the api process. */
const P99_BOUND_MS = 2000;
/** Pause of an attacker between two connections. */
const PAUSE_MS = 1000;
/** The idle connections of one address against the pre-authentication body budget, and for how long. */
const PREAUTH_IDLE = 70;
const PREAUTH_MS = Number(process.env.RELIABILITY_ABUSE_PREAUTH_MS ?? 12_000);
const PREAUTH_ATTACKER = '127.0.0.2';

const MB = 1024 * 1024;
const ZEROS = Buffer.alloc(MB, 0x61);

function memory(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) * 1024;
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

const mb = (bytes: number) => `${fmt(bytes / MB)} MB`;

/** CPU seconds (user + system) the process has used so far. */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  // utime and stime are fields 14 and 15 of /proc/<pid>/stat, in clock ticks (100 per second on Linux).
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** Counts of what the attackers saw: HTTP statuses, or how the connection ended without one. */
class Outcomes {
  readonly counts = new Map<string, number>();
  add(what: string): void {
    this.counts.set(what, (this.counts.get(what) ?? 0) + 1);
  }
  get total(): number {
    return [...this.counts.values()].reduce((a, b) => a + b, 0);
  }
  toString(): string {
    return (
      [...this.counts]
        .sort((a, b) => b[1] - a[1])
        .map(([k, n]) => `${k} × ${fmt(n)}`)
        .join(', ') || 'none'
    );
  }
}

/**
 * One raw HTTP exchange: writes `head`, then `body` bytes (`chunk` at a time, `everyMs` apart; 0 =
 * as fast as the socket takes them) until done or the server answers or closes. Resolves with the
 * status of the first response line, or how the connection ended.
 */
function exchange(
  port: number,
  head: string,
  body: { bytes: number; chunk: Buffer; everyMs: number } | Buffer | null,
  stop: () => boolean,
  headerDripMs = 0,
  localAddress?: string,
): Promise<string> {
  return new Promise((resolve) => {
    const socket: Socket = connect({ port, host: '127.0.0.1', localAddress });
    let received = '';
    let done = false;
    const finish = (what: string) => {
      if (done) return;
      done = true;
      socket.destroy();
      resolve(what);
    };
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      const status = /^HTTP\/1\.1 (\d{3})/.exec(received)?.[1];
      if (status && status !== '100') finish(status);
    });
    socket.on('error', (error: NodeJS.ErrnoException) => finish(error.code ?? 'error'));
    socket.on('close', () => finish(received ? 'closed mid-answer' : 'closed without an answer'));
    socket.on('connect', async () => {
      if (headerDripMs > 0) {
        // Only the request line and then one header line at a time: the headers never end.
        socket.write(head.split('\r\n')[0] + '\r\n');
        while (!done && !stop()) {
          await sleep(headerDripMs);
          if (!done) socket.write('X-Drip: 1\r\n');
        }
        return finish('stopped');
      }
      socket.write(head);
      if (body === null) return;
      if (Buffer.isBuffer(body)) {
        socket.write(body);
        return;
      }
      let sent = 0;
      while (!done && sent < body.bytes) {
        if (stop()) return finish('stopped');
        const n = Math.min(body.chunk.length, body.bytes - sent);
        const flushed = socket.write(n === body.chunk.length ? body.chunk : body.chunk.subarray(0, n));
        sent += n;
        if (body.everyMs > 0) await sleep(body.everyMs);
        else if (!flushed)
          await new Promise<void>((drained) => {
            socket.once('drain', drained);
            socket.once('close', drained);
          });
      }
    });
  });
}

describe('reliability: unauthenticated large, compressed and slow bodies', () => {
  let stack: Stack;
  let port: number;
  let pid: number;
  let tenant: Tenant;
  let phone: string;
  const result = new ResultBuilder(
    'abuse-bodies',
    `Abusive bodies: ${BIG} × 24 MB unauthenticated, ${BOMBS} gzip bombs, ${SLOW_HEADERS + SLOW_BODIES + AUTH_SLOW} slow senders, ${PREAUTH_IDLE} idle pre-authentication sockets from one address`,
  );

  beforeAll(async () => {
    stack = await startStack({ tag: 'abuse', workers: 0, env: { APP_ENV: 'production', LOG_LEVEL: 'warn' } });
    port = stack.apis[0].port;
    pid = stack.apis[0].pid!;
    tenant = await createTenant(stack.apis[0].baseUrl, { lines: ['PHONE_NUMBER'] });
    phone = tenant.lines[0].address;
  });
  afterAll(async () => {
    result.record();
    await stack?.stop();
  });

  /** Authorised traffic, one request at a time until `stop`: MCP tools/list and an inbound SMS in turn. */
  async function authorised(stop: () => boolean, into: { ms: number[]; failures: Outcomes }): Promise<void> {
    const base = stack.apis[0].baseUrl;
    for (let i = 0; !stop(); i++) {
      const answer =
        i % 2 === 0
          ? await rpc(base, tenant.apiKey, 'tools/list', undefined, 10_000)
          : await send('POST', `${base}/ingest/sms/inbound`, {
              headers: { authorization: `Bearer ${INGEST_TOKEN}`, 'content-type': 'application/json' },
              body: JSON.stringify({ to: phone, from: '+16665550123', body: `during ${i}`, providerMessageId: `abuse-${Date.now()}-${i}` }),
              timeoutMs: 10_000,
            });
      if (answer.status === 200 || answer.status === 201) into.ms.push(answer.ms);
      else into.failures.add(`${i % 2 === 0 ? 'tools/list' : 'sms'} ${answer.status || answer.error}`);
    }
  }

  it(`RSS stays within ${RSS_BOUND_MB} MB of its level before, and authorised p99 under ${P99_BOUND_MS} ms`, async () => {
    result.load = `${ATTACK_MS / 1000} s of ${BIG + BOMBS + SLOW_HEADERS + SLOW_BODIES + AUTH_SLOW} abusive connections (reconnecting) against one api process, with authorised MCP and SMS traffic`;
    result.faults = '—';
    result.badInputs = `24 MB bodies without a token, gzip bombs (25 KB → 25 MB), headers at 1 line/s, bodies at 2 KB/s`;

    // Warm up, then the authorised latency alone.
    let until = Date.now() + 2000;
    await authorised(() => Date.now() > until, { ms: [], failures: new Outcomes() });
    // The level before is the peak of the same 100 ms samples over those 5 s, as the peak during
    // the attack is: one reading could fall on a low point between two collections and make the
    // process's usual swing look like growth (seen in CI: 218 MB read, 270 MB reached just before).
    const before = { ms: [] as number[], failures: new Outcomes() };
    until = Date.now() + 5000;
    let levelBefore = memory(pid).rss;
    const beforeSampler = setInterval(() => {
      levelBefore = Math.max(levelBefore, memory(pid).rss);
    }, 100);
    await authorised(() => Date.now() > until, before);
    clearInterval(beforeSampler);
    const idle = { ...memory(pid), rss: Math.max(levelBefore, memory(pid).rss) };

    // The attack, with authorised traffic alongside and memory sampled every 100 ms.
    const attackEnds = Date.now() + ATTACK_MS;
    const stop = () => Date.now() > attackEnds;
    const during = { ms: [] as number[], failures: new Outcomes() };
    let peakRss = idle.rss;
    const sampler = setInterval(() => {
      peakRss = Math.max(peakRss, memory(pid).rss);
    }, 100);
    const cpuBefore = cpuSeconds(pid);
    const generatorBefore = process.cpuUsage();
    const attackStarted = Date.now();
    const outcomes = { big: new Outcomes(), bombs: new Outcomes(), slowHeaders: new Outcomes(), slowBodies: new Outcomes(), authSlow: new Outcomes() };
    const loop = async (out: Outcomes, once: () => Promise<string>, pauseMs: number) => {
      while (!stop()) {
        const what = await once();
        if (what !== 'stopped') out.add(what);
        await sleep(pauseMs);
      }
    };
    const emailHead = (auth: boolean, extra = '') =>
      `POST /ingest/email/inbound HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: message/rfc822\r\n${auth ? `Authorization: Bearer ${INGEST_TOKEN}\r\n` : ''}${extra}`;
    const bomb = gzipSync(Buffer.alloc(25 * MB, 0x61));
    const attackers = [
      ...Array.from({ length: BIG }, () =>
        loop(
          outcomes.big,
          () => exchange(port, `${emailHead(false)}Content-Length: ${BODY_BYTES}\r\n\r\n`, { bytes: BODY_BYTES, chunk: ZEROS, everyMs: 0 }, stop),
          PAUSE_MS,
        ),
      ),
      ...Array.from({ length: BOMBS }, (_, i) =>
        loop(
          outcomes.bombs,
          () => exchange(port, `${emailHead(i % 2 === 1)}Content-Encoding: gzip\r\nContent-Length: ${bomb.length}\r\n\r\n`, bomb, stop),
          PAUSE_MS,
        ),
      ),
      ...Array.from({ length: SLOW_HEADERS }, () =>
        loop(outcomes.slowHeaders, () => exchange(port, `${emailHead(false)}Content-Length: ${BODY_BYTES}\r\n\r\n`, null, stop, 1000), PAUSE_MS),
      ),
      ...Array.from({ length: SLOW_BODIES }, () =>
        loop(
          outcomes.slowBodies,
          () =>
            exchange(
              port,
              `${emailHead(false)}Content-Length: ${BODY_BYTES}\r\n\r\n`,
              { bytes: BODY_BYTES, chunk: Buffer.alloc(1024, 0x61), everyMs: 500 },
              stop,
            ),
          PAUSE_MS,
        ),
      ),
      ...Array.from({ length: AUTH_SLOW }, () =>
        loop(
          outcomes.authSlow,
          () =>
            exchange(
              port,
              `${emailHead(true)}Content-Length: ${BODY_BYTES}\r\n\r\n`,
              { bytes: BODY_BYTES, chunk: Buffer.alloc(16 * 1024, 0x61), everyMs: 250 },
              stop,
            ),
          1000,
        ),
      ),
    ];
    await Promise.all([authorised(stop, during), ...attackers]);
    clearInterval(sampler);
    const attackSeconds = (Date.now() - attackStarted) / 1000;
    const apiCpu = (cpuSeconds(pid) - cpuBefore) / attackSeconds;
    const generatorUsage = process.cpuUsage(generatorBefore);
    const generatorCpu = (generatorUsage.user + generatorUsage.system) / 1e6 / attackSeconds;
    await sleep(500);
    const after = memory(pid);
    peakRss = Math.max(peakRss, after.rss);
    const health = await send('GET', `${stack.apis[0].baseUrl}/health`);

    const p99Before = percentile(before.ms, 99);
    const p99During = percentile(during.ms, 99);
    result.figure('attack', `${ATTACK_MS / 1000} s; ${fmt(Object.values(outcomes).reduce((n, o) => n + o.total, 0))} abusive requests answered or cut`);
    result.figure(`${BIG} × 24 MB bodies without a token`, outcomes.big.toString());
    result.figure(`${BOMBS} gzip bombs (half with the ingest token)`, outcomes.bombs.toString());
    result.figure(`${SLOW_HEADERS} slow header senders (1 line/s)`, outcomes.slowHeaders.toString());
    result.figure(`${SLOW_BODIES} slow bodies without a token (2 KB/s)`, outcomes.slowBodies.toString());
    result.figure(`${AUTH_SLOW} slow 24 MB bodies with the ingest token (64 KB/s)`, outcomes.authSlow.toString());
    result.figure('CPU during the attack: api process / load generator (cores)', `${fmt(apiCpu, 2)} / ${fmt(generatorCpu, 2)}`);
    result.figure('api RSS before (peak of the 5 s before) / peak during / after (VmRSS)', `${mb(idle.rss)} / ${mb(peakRss)} / ${mb(after.rss)}`);
    result.figure('api VmHWM (lifetime peak) before / after', `${mb(idle.hwm)} / ${mb(after.hwm)}`);
    result.figure(`stated bound: peak RSS ≤ before + ${RSS_BOUND_MB} MB`, `${mb(idle.rss + RSS_BOUND_MB * MB)} (peak ${mb(peakRss)})`);
    result.figure('authorised requests before: count, p50, p99', `${fmt(before.ms.length)}, ${fmt(percentile(before.ms, 50), 1)} ms, ${fmt(p99Before, 1)} ms`);
    result.figure('authorised requests during: count, p50, p99', `${fmt(during.ms.length)}, ${fmt(percentile(during.ms, 50), 1)} ms, ${fmt(p99During, 1)} ms`);
    result.figure('authorised requests that failed (before, during)', `${before.failures}; ${during.failures}`);
    result.figure(`stated bound: authorised p99 during < ${P99_BOUND_MS} ms`, `${fmt(p99During, 1)} ms`);
    const errorLines = stack.apis[0].errorLines();
    result.figure('process alive / /health after / error lines in its log', `${stack.apis[0].alive} / ${health.status} / ${errorLines.length}`);
    if (errorLines.length) result.notes.push(`first error line: ${errorLines[0].slice(0, 400)}`);
    result.notes.push(
      'Bodies are read only after authentication (docs/security.md): an unauthenticated request is answered 401 and its connection ' +
        'closed before its body is buffered; compressed bodies are refused (415) without being inflated; slow header senders are cut at ' +
        'HTTP_HEADERS_TIMEOUT_MS (408); authenticated bodies share HTTP_BODY_BUDGET_BYTES (503 with Retry-After beyond it).',
    );

    expect(peakRss).toBeLessThanOrEqual(idle.rss + RSS_BOUND_MB * MB);
    expect(after.hwm).toBeLessThanOrEqual(Math.max(idle.hwm, idle.rss + RSS_BOUND_MB * MB));
    expect(during.failures.total).toBe(0);
    expect(during.ms.length).toBeGreaterThan(20);
    expect(p99During).toBeLessThan(P99_BOUND_MS);
    // Every unauthenticated big or slow body was refused before it was read, no compressed body was inflated.
    for (const status of outcomes.big.counts.keys()) expect(['401', 'EPIPE', 'ECONNRESET']).toContain(status);
    for (const status of outcomes.slowBodies.counts.keys()) expect(['401']).toContain(status);
    for (const status of outcomes.bombs.counts.keys()) expect(['401', '415']).toContain(status);
    expect(outcomes.big.counts.get('401') ?? 0).toBeGreaterThan(BIG);
    expect(outcomes.slowHeaders.counts.get('408') ?? 0).toBeGreaterThanOrEqual(SLOW_HEADERS);
    expect(stack.apis[0].alive).toBe(true);
    expect(health.status).toBe(200);
    expect(errorLines).toEqual([]);
    result.passed = true;
  });

  it(`idle sockets from one address holding their pre-authentication share: signed Twilio inbounds from another address are all taken`, async () => {
    // Set again at the end: the row passes only if both tests did.
    const earlierPassed = result.passed;
    result.passed = false;
    // A Twilio account on the tenant's phone line, inserted directly: in production mode the admin
    // API would check it against Twilio's API over https, which this stack has no stand-in for.
    const account = `AC${randomBytes(16).toString('hex')}`;
    const token = randomBytes(16).toString('hex');
    const line = tenant.lines[0];
    const db = new Client({ connectionString: stack.databaseUrl });
    await db.connect();
    try {
      const sealed = new SecretBox({ secretsKey: Buffer.from(SHARED_SECRETS_KEY, 'hex'), secretsKeyFallbacks: [] }).seal(token);
      await db.query(`INSERT INTO sms_providers (line_id, provider, account_sid, auth_token_sealed) VALUES ($1, 'twilio', $2, $3)`, [line.id, account, sealed]);

      const base = stack.apis[0].baseUrl;
      const ends = Date.now() + PREAUTH_MS;
      const stop = () => Date.now() > ends;
      const idle = new Outcomes();
      const head =
        'POST /ingest/twilio/sms HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n' +
        `X-Twilio-Signature: AAAAAAAAAAAAAAAAAAAAAAAAAAA=\r\nContent-Length: ${64 * 1024}\r\n\r\n`;
      const attackers = Array.from({ length: PREAUTH_IDLE }, async () => {
        while (!stop()) {
          const what = await exchange(port, head, Buffer.from('A'), stop, 0, PREAUTH_ATTACKER);
          if (what !== 'stopped') idle.add(what);
          await sleep(200);
        }
      });
      // Signed inbounds from 127.0.0.1, one after the other, as Twilio would send them.
      const twilio = new Outcomes();
      const sids: string[] = [];
      const ms: number[] = [];
      const inbounds = (async () => {
        await sleep(500); // the attacker's connections are in
        for (let i = 0; !stop(); i++) {
          const sid = `SM${randomBytes(16).toString('hex')}`;
          const params = {
            AccountSid: account,
            Body: `through the idle sockets ${i}`,
            From: '+16665550199',
            MessageSid: sid,
            NumMedia: '0',
            SmsMessageSid: sid,
            SmsSid: sid,
            To: line.address,
          };
          const answer = await send('POST', `${base}/ingest/twilio/sms`, {
            headers: {
              'content-type': 'application/x-www-form-urlencoded',
              'x-twilio-signature': twilioSignature(token, 'http://127.0.0.1:3000/ingest/twilio/sms', params),
            },
            body: new URLSearchParams(params).toString(),
            timeoutMs: 10_000,
          });
          twilio.add(String(answer.status || answer.error));
          if (answer.status === 200) {
            sids.push(sid);
            ms.push(answer.ms);
          }
          await sleep(100);
        }
      })();
      await Promise.all([inbounds, ...attackers]);
      const stored = await db.query<{ n: string }>(`SELECT count(*) AS n FROM messages WHERE line_id = $1 AND provider_message_id = ANY($2)`, [line.id, sids]);

      result.figure(
        `pre-authentication share: ${PREAUTH_IDLE} idle connections from ${PREAUTH_ATTACKER} (64 KiB declared, 1 byte sent, reopened), ${PREAUTH_MS / 1000} s`,
        idle.toString(),
      );
      result.figure(
        'pre-authentication share: signed Twilio inbounds from 127.0.0.1 meanwhile, stored, p99',
        `${twilio}; ${stored.rows[0].n} stored; ${fmt(percentile(ms, 99), 1)} ms`,
      );
      result.notes.push(
        'Bodies read before authentication (Twilio callbacks, sign-in forms) share 4 MiB per process, of which one client address may hold ' +
          'HTTP_UNAUTHENTICATED_BODY_BYTES_PER_IP (512 KiB): past it 429, and the bodies it holds are cut at their 5 s deadline (408).',
      );

      // Every inbound was taken and stored; the attacker was refused past its share (429) and cut at the deadline (408), nothing else.
      expect(twilio.counts.get('200') ?? 0).toBe(twilio.total);
      expect(twilio.total).toBeGreaterThan(10);
      expect(Number(stored.rows[0].n)).toBe(sids.length);
      for (const status of idle.counts.keys()) expect(['408', '429']).toContain(status);
      expect(idle.counts.get('429') ?? 0).toBeGreaterThan(PREAUTH_IDLE);
      expect(idle.counts.get('408') ?? 0).toBeGreaterThan(0);
      expect(stack.apis[0].alive).toBe(true);
      expect(stack.apis[0].errorLines()).toEqual([]);
      result.passed = earlierPassed;
    } finally {
      await db.end();
    }
  });
});
