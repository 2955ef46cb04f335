import { createTenant, ingestSms, IngestOutcome, rpc, send, steadyTraffic, Tenant, toolOk } from './support/clients';
import { startStack, Stack } from './support/fixture';
import { fmt, ResultBuilder } from './support/results';
import { PrivatePostgres, sleep, waitFor } from './support/stack';

/**
 * Issue 6: "Restart PostgreSQL during traffic: requests fail cleanly (503) while it is down; the
 * service recovers by itself; no committed event is lost."
 *
 * A PRIVATE PostgreSQL cluster (initdb into a temporary directory, pg_ctl start/stop; the shared
 * one on 5432 is never touched), a private redis-server, one `api` and one `worker` process.
 * Traffic: inbound SMS, MCP tool calls and /ready probes at a steady rate. PostgreSQL is stopped
 * for 15 s, then started, two ways:
 * - `pg_ctl stop -m fast`: sessions are cut, open transactions roll back, the WAL is flushed;
 * - `pg_ctl stop -m immediate`: a crash. The worker's claims and success records commit
 *   asynchronously (docs/PERFORMANCE.md, change 27), so their last few hundred milliseconds can be
 *   lost in it: those deliveries are sent again, with the same event ids (counted, allowed: at
 *   least once), and no committed event may be lost.
 */
const DOWN_MS = Number(process.env.RELIABILITY_PG_DOWN_MS ?? 15_000);
const BEFORE_MS = 5_000;
const AFTER_MS = 10_000;
/** A request may take this long while the database is away (the pool's connect timeout is 5 s). */
const CLEAN_FAILURE_MS = 10_000;

type Kind = 'ingest' | 'mcp' | 'ready';
interface Outcome {
  kind: Kind;
  status: number;
  ms: number;
  sentAt: number;
  doneAt: number;
  jsonBody: boolean;
  messageId?: string;
  error?: string;
  text?: string;
}

const MODES = [
  { mode: 'fast', id: 'postgres-restart', title: `PostgreSQL restarted under traffic (${DOWN_MS / 1000} s down)` },
  { mode: 'immediate', id: 'postgres-crash', title: `PostgreSQL crashed under traffic (pg_ctl stop -m immediate, ${DOWN_MS / 1000} s down)` },
] as const;

describe.each(MODES)('reliability: PostgreSQL stopped ($mode) under traffic', ({ mode, id, title }) => {
  let pg: PrivatePostgres | undefined;
  let stack: Stack;
  let tenant: Tenant;
  let skipped: string | undefined;
  const result = new ResultBuilder(id, title);

  beforeAll(async () => {
    try {
      pg = await PrivatePostgres.create();
    } catch (error) {
      skipped = `no private PostgreSQL could be made: ${(error as Error).message}`;
      return;
    }
    const url = await pg.createDatabase('mss_reliability');
    stack = await startStack({ tag: `pg${mode}`, databaseUrl: url });
    tenant = await createTenant(stack.apis[0].baseUrl, { lines: ['PHONE_NUMBER'] });
  });
  afterAll(async () => {
    if (skipped) result.skipped = skipped;
    result.record();
    await stack?.stop();
    await pg?.destroy();
  });

  it('answers 503 while PostgreSQL is down, recovers by itself, loses no committed event', async () => {
    if (skipped) {
      process.stdout.write(`${id} skipped: ${skipped}\n`);
      return;
    }
    const api = stack.apis[0];
    const { receiver } = stack;
    const { secret } = await toolOk<{ secret: string }>(api.baseUrl, tenant.apiKey, 'register_webhook', {
      url: `${stack.receiverUrl}/pg`,
      events: ['message.received'],
    });
    receiver.secrets.set('/pg', [secret]);
    const phone = tenant.lines[0].address;

    const timed = async (kind: Kind, call: () => Promise<IngestOutcome | { status: number; ms: number; text?: string; error?: string }>): Promise<Outcome> => {
      const sentAt = Date.now();
      const o = await call();
      let jsonBody = false;
      try {
        if (o.text) JSON.parse(o.text);
        jsonBody = true;
      } catch {
        jsonBody = false;
      }
      return { kind, sentAt, doneAt: Date.now(), jsonBody, ...o };
    };
    const ingest = steadyTraffic(20, (i) =>
      timed('ingest', () =>
        ingestSms(
          api.baseUrl,
          { to: phone, from: `+1666${String(3_000_000 + (i % 50)).padStart(7, '0')}`, body: `pg ${i}`, providerMessageId: `pg-${i}` },
          20_000,
        ),
      ),
    );
    const mcp = steadyTraffic(10, () =>
      timed('mcp', async () => {
        const a = await rpc(api.baseUrl, tenant.apiKey, 'tools/call', { name: 'list_webhooks', arguments: {} }, 20_000);
        const rpcError = a.status === 200 && /"error":\{/.test(a.text) ? ' (JSON-RPC error)' : '';
        return { status: a.status, ms: a.ms, text: a.text, error: a.error ?? (rpcError || undefined) };
      }),
    );
    const ready = steadyTraffic(2, () =>
      timed('ready', async () => {
        const a = await send('GET', `${api.baseUrl}/ready`, { timeoutMs: 20_000 });
        return { status: a.status, ms: a.ms, text: a.text, error: a.error };
      }),
    );

    await sleep(BEFORE_MS);
    const stoppedAt = Date.now();
    await pg!.stop(mode);
    const downAt = Date.now();
    await sleep(DOWN_MS);
    const startingAt = Date.now();
    await pg!.start();
    const upAt = Date.now();
    // Recovery: the first 2xx of each kind sent after the database was back.
    const firstOk = (kind: Kind) => {
      const ok = [...ingest.outcomes, ...mcp.outcomes, ...ready.outcomes].filter(
        (o) => o.kind === kind && o.sentAt >= upAt && (o.status === 200 || o.status === 201) && !o.error,
      );
      return ok.length ? Math.min(...ok.map((o) => o.doneAt)) : undefined;
    };
    await waitFor(() => firstOk('ingest') && firstOk('mcp') && firstOk('ready'), 'the service to answer 2xx again', 60_000, 100);
    const recovered = { ingest: firstOk('ingest')! - upAt, mcp: firstOk('mcp')! - upAt, ready: firstOk('ready')! - upAt };
    await sleep(AFTER_MS);
    const all = [...(await ingest.stop()), ...(await mcp.stop()), ...(await ready.stop())];

    const ok = (o: Outcome) => o.status >= 200 && o.status < 300 && !o.error;
    const window = (o: Outcome) => o.doneAt > stoppedAt && o.sentAt < upAt + Math.max(recovered.ingest, recovered.mcp, recovered.ready);
    const duringDown = all.filter(window);
    const afterRecovery = all.filter((o) => o.sentAt > upAt + 2000 + Math.max(recovered.ingest, recovered.mcp));
    const histogram = (list: Outcome[]) => {
      const counts = new Map<string, number>();
      for (const o of list) {
        const key = `${o.status || 'no answer'}${o.error && o.status ? o.error : ''}`;
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
      return [...counts]
        .sort()
        .map(([k, n]) => `${k} × ${fmt(n)}`)
        .join(', ');
    };
    result.notes.push(
      'The 503 answers (with Retry-After: 5) come from HttpErrorFilter mapping database connection errors (isDatabaseUnavailable in src/common/errors.ts); before that fix they were 500.',
    );
    result.load = `${fmt(all.length)} requests: 20 inbound SMS/s, 10 MCP tool calls/s, 2 /ready/s; 1 api + 1 worker`;
    result.faults = `PostgreSQL stopped (pg_ctl -m ${mode}) ${DOWN_MS / 1000} s, then started`;
    for (const kind of ['ingest', 'mcp', 'ready'] as const) {
      const list = duringDown.filter((o) => o.kind === kind);
      result.figure(`${kind}: answers while down (status × count)`, histogram(list) || 'none');
      result.figure(`${kind}: slowest answer while down`, `${fmt(Math.max(0, ...list.map((o) => o.ms)))} ms`);
    }
    result.figure('pg_ctl stop took / start took', `${fmt(downAt - stoppedAt)} / ${fmt(upAt - startingAt)} ms`);
    result.figure(
      'first 2xx after PostgreSQL was back (ingest / mcp / ready)',
      `${fmt(recovered.ingest)} / ${fmt(recovered.mcp)} / ${fmt(recovered.ready)} ms`,
    );
    result.figure('answers after recovery that were not 2xx', fmt(afterRecovery.filter((o) => !ok(o)).length));
    result.figure('process still running (api / worker)', `${stack.apis[0].alive} / ${stack.workers[0].alive}`);

    const accepted = all.filter((o) => o.kind === 'ingest' && ok(o));
    const acceptedIds = new Set(accepted.map((o) => o.messageId!));
    const missing = () => [...acceptedIds].filter((id) => !receiver.messageIds('/pg').has(id));
    try {
      await waitFor(() => missing().length === 0, 'every committed message at the receiver', 90_000, 250);
    } finally {
      result.lost = missing().length;
      result.duplicates = fmt(receiver.duplicates('/pg').length);
      result.figure('inbound SMS committed (2xx) / delivered', `${fmt(accepted.length)} / ${fmt(accepted.length - missing().length)}`);
      result.figure('event ids delivered more than once', fmt(receiver.duplicates('/pg').length));
    }
    const unclean = duringDown.filter((o) => !ok(o) && !(o.status === 503 && o.jsonBody));
    if (unclean.length) {
      result.notes.push(
        `requests that failed other than with a JSON 503 while the database was down: ${histogram(unclean)}; e.g. ${unclean[0].kind} ${unclean[0].status} ${unclean[0].error ?? ''} ${unclean[0].text?.slice(0, 200) ?? ''}`,
      );
    }

    expect(missing()).toEqual([]);
    expect(stack.apis[0].alive && stack.workers[0].alive).toBe(true);
    expect(afterRecovery.filter((o) => !ok(o)).map((o) => `${o.kind} ${o.status} ${o.error ?? ''}`)).toEqual([]);
    expect(duringDown.filter((o) => o.ms > CLEAN_FAILURE_MS).map((o) => `${o.kind} ${o.ms} ms`)).toEqual([]);
    expect(histogram(unclean)).toBe('');
    result.passed = true;
  });
});
