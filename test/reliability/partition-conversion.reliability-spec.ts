import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { runMigrations } from '../../src/database/migrate';
import { DAY_PARTITIONING_MIGRATIONS, fillDeliveryLog } from '../support/delivery-log-fill';
import { createTenant, ingestSms, IngestOutcome, percentile, Tenant, toolOk } from './support/clients';
import { startStack, Stack } from './support/fixture';
import { fmt, ResultBuilder } from './support/results';
import { compileBuildOf, createDatabase, ROOT, ServiceProcess, sleep, waitFor } from './support/stack';

/**
 * Issue 46: an installation with a large delivery log is upgraded to the day-partitioned log
 * (migration 1763801000000 DeliveryLogPartitions) while it delivers.
 *
 * The service as it was before the partitioning (compiled from the parent of the commit that added
 * the migration) runs one `api` and one `worker` on a database migrated up to that point, filled
 * with 1,000,000 finished deliveries, their attempts and payloads. Inbound SMS arrive at a steady
 * rate and are delivered to a receiver; meanwhile the partitioning migration runs (as the new
 * build's first process would run it), with the old processes still writing, and a probe
 * connection INSERTs a delivery and reads an old one by id every few milliseconds. Then the new
 * build's api and worker start and the old ones stop (a rolling upgrade).
 *
 * Asserted: every row of the three tables kept (count and an MD5 of the ordered ids, before and
 * after); every accepted message delivered, none twice; the longest a probe statement waited while
 * the migration ran (its ACCESS EXCLUSIVE step) under LOCK_BOUND_MS; old deliveries found after by
 * id (get_webhook_delivery, with their attempts and envelope) and by evt id.
 */
const ROWS = Number(process.env.RELIABILITY_PARTITION_ROWS ?? 1_000_000);
/** Inbound SMS per second while the upgrade runs. */
const RATE = 20;
/** The most a concurrent INSERT or read may wait for the migration's locks. */
const LOCK_BOUND_MS = 1000;
/**
 * The upgrade as docs/delivery-log.md ("The migration") prescribes it: the old build's workers stop
 * before the migration (only the old api and the probe write during it; deliveries wait in the log
 * and go out once the new worker starts). RELIABILITY_PARTITION_KEEP_OLD_WORKER=1 runs the old
 * worker through the migration instead, which the docs warn against: after the migration the old
 * build's ON CONFLICT targets (payload digest, attempt number) no longer exist, so it cannot record
 * attempts it made, and re-sends them.
 */
const STOP_OLD_WORKER = process.env.RELIABILITY_PARTITION_KEEP_OLD_WORKER !== '1';
const MIGRATION_FILE = 'src/database/migrations/1763801000000-DeliveryLogPartitions.ts';
const DAY_MS = 86_400_000;

/**
 * The commit before the one that added the partitioning migration: the build an installation runs
 * before it. Undefined, with the reason, in a checkout without that history (no .git, or a shallow
 * clone): the test then says so and is skipped, as it cannot build the old service.
 */
function commitBeforePartitioning(): { commit?: string; reason?: string } {
  try {
    const git = (...args: string[]) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
    const added = git('log', '--diff-filter=A', '--format=%H', '--', MIGRATION_FILE).split('\n').pop();
    if (!added) return { reason: `${MIGRATION_FILE} is not in this checkout's git history` };
    return { commit: git('rev-parse', '--verify', `${added}^{commit}^`) };
  } catch (error) {
    return { reason: `no git history to build the old service from (${(error as Error).message.split('\n')[0]})` };
  }
}
const OLD_BUILD = commitBeforePartitioning();
if (!OLD_BUILD.commit) console.warn(`partition-conversion skipped: ${OLD_BUILD.reason}`);

interface TableSum {
  count: number;
  md5: string;
}

/** Count and MD5 of the ordered ids of the filled rows (created before `until`) of each table. */
async function sums(db: Client, until: Date): Promise<Record<string, TableSum>> {
  const q = async (sql: string) => (await db.query(sql, [until])).rows[0] as TableSum;
  return {
    webhook_deliveries: await q(
      `SELECT count(*)::int AS count, md5(string_agg(id::text, ',' ORDER BY id)) AS md5 FROM webhook_deliveries WHERE created_at < $1`,
    ),
    webhook_delivery_attempts: await q(
      `SELECT count(*)::int AS count, md5(string_agg(a.id::text, ',' ORDER BY a.id)) AS md5
         FROM webhook_delivery_attempts a WHERE a.delivery_id IN (SELECT id FROM webhook_deliveries WHERE created_at < $1)`,
    ),
    webhook_payloads: await q(`SELECT count(*)::int AS count, md5(string_agg(id::text, ',' ORDER BY id)) AS md5 FROM webhook_payloads WHERE created_at < $1`),
  };
}

interface Probe {
  at: number;
  ms: number;
  kind: 'insert' | 'read';
  error?: string;
}

(OLD_BUILD.commit ? describe : describe.skip)('reliability: the delivery log partitioned by day while it delivers', () => {
  let stack: Stack;
  let tenant: Tenant;
  let dropDatabase: (() => Promise<void>) | undefined;
  const extra: ServiceProcess[] = [];
  const result = new ResultBuilder('partition-conversion', `The delivery log (${fmt(ROWS)} deliveries) partitioned by day while it delivers`);

  beforeAll(async () => {
    const oldCommit = OLD_BUILD.commit!;
    const compiled = Date.now();
    const oldBuild = compileBuildOf(oldCommit);
    result.notes.push(
      `Old build: ${oldCommit.slice(0, 7)} (the parent of the commit that added ${MIGRATION_FILE}), compiled in ${fmt(Date.now() - compiled)} ms.`,
    );
    const db = await createDatabase('partconv', undefined, { before: DAY_PARTITIONING_MIGRATIONS });
    dropDatabase = db.drop;
    // Retention off: the filled rows are weeks old and must all be there after.
    stack = await startStack({ tag: 'partconv', databaseUrl: db.url, build: oldBuild, env: { DELIVERY_LOG_RETENTION_DAYS: '0' } });
    tenant = await createTenant(stack.apis[0].baseUrl, { lines: ['PHONE_NUMBER'] });
  });
  afterAll(async () => {
    result.record();
    await Promise.all(extra.map((p) => p.stop('SIGTERM')));
    await stack?.stop();
    await dropDatabase?.();
  });

  it('keeps every row, loses and repeats no delivery, and blocks writers under the bound', async () => {
    const { receiver } = stack;
    const [oldApi, oldWorker] = [stack.apis[0], stack.workers[0]];
    const { secret } = await toolOk<{ secret: string }>(oldApi.baseUrl, tenant.apiKey, 'register_webhook', {
      url: `${stack.receiverUrl}/conv`,
      events: ['message.received'],
    });
    receiver.secrets.set('/conv', [secret]);
    const db = new Client({ connectionString: stack.databaseUrl });
    await db.connect();
    const [{ id: endpointId }] = (await db.query(`SELECT id FROM webhook_endpoints WHERE user_id = $1`, [tenant.userId])).rows as Array<{ id: string }>;
    const probeDb = new Client({ connectionString: stack.databaseUrl });
    await probeDb.connect();
    // The loops below run until these are cleared, by the test or, when it fails, by the finally.
    let [ingesting, probing, sampling] = [true, true, true];
    const loops: Array<Promise<void>> = [];
    try {
      result.load = `${fmt(ROWS)} deliveries in the log; ${RATE} inbound SMS/s delivered to one endpoint during the upgrade (old api + worker, then new)`;
      result.faults = `the partitioning migration run while the old build ${STOP_OLD_WORKER ? 'ingests (its worker stopped first)' : 'ingests and delivers'}; a rolling restart onto the new build`;
      // 1. The installation: ROWS finished deliveries over the last 20 days, on the old layout, indexes and all.
      const fillEnd = new Date(Date.now() - 60_000);
      const fillStarted = Date.now();
      const fill = await fillDeliveryLog(db, {
        rows: ROWS,
        from: new Date(fillEnd.getTime() - 20 * DAY_MS),
        to: fillEnd,
        userId: tenant.userId,
        endpointIds: [endpointId],
        tag: 'partconv',
      });
      await db.query('ANALYZE webhook_deliveries, webhook_delivery_attempts, webhook_payloads');
      result.figure(
        'filled (INSERT ... SELECT generate_series)',
        `${fmt(fill.deliveries)} deliveries, ${fmt(fill.attempts)} attempts, ${fmt(fill.payloads)} payloads in ${((Date.now() - fillStarted) / 1000).toFixed(1)} s`,
      );
      const before = await sums(db, fillEnd);
      expect(before.webhook_deliveries.count).toBe(ROWS);
      const samples = (
        await db.query(
          `SELECT id, event_id, attempt_count FROM webhook_deliveries WHERE created_at < $1 AND id IN (
             (SELECT id FROM webhook_deliveries WHERE created_at < $1 ORDER BY created_at LIMIT 1)
             UNION ALL (SELECT id FROM webhook_deliveries WHERE created_at < $1 AND status = 'failed' ORDER BY created_at DESC LIMIT 1))`,
          [fillEnd],
        )
      ).rows as Array<{ id: string; event_id: string; attempt_count: number }>;
      const [{ payloadId }] = (await db.query(`SELECT min(id)::text AS "payloadId" FROM webhook_payloads`)).rows;

      // 2. Steady inbound SMS to the api of the moment; a probe that writes and reads all along.
      const outcomes: IngestOutcome[] = [];
      let target = oldApi;
      const line = tenant.lines[0].address;
      const inFlight: Array<Promise<void>> = [];
      const ingest = (async (): Promise<void> => {
        for (let i = 0; ingesting; i++) {
          inFlight.push(
            ingestSms(target.baseUrl, {
              to: line,
              from: `+1666${String(1_000_000 + (i % 100)).padStart(7, '0')}`,
              body: `upgrade ${i}`,
              providerMessageId: `conv-${i}`,
            }).then((o) => void outcomes.push(o)),
          );
          await sleep(1000 / RATE);
        }
        await Promise.all(inFlight);
      })();
      const probes: Probe[] = [];
      const probe = (async (): Promise<void> => {
        while (probing) {
          for (const [kind, sql, params] of [
            [
              'insert',
              `INSERT INTO webhook_deliveries (event_id, endpoint_id, user_id, event_type, mode, event_created_at, status, created_at, payload_id)
               VALUES ('evt_' || md5(random()::text), $1, $2, 'message.received', 'concise', now(), 'succeeded', now(), $3)`,
              [endpointId, tenant.userId, payloadId],
            ],
            ['read', `SELECT id, status FROM webhook_deliveries WHERE id = $1`, [samples[0].id]],
          ] as const) {
            const at = Date.now();
            const error = await probeDb.query(sql, [...params]).then(
              () => undefined,
              (e: Error) => e.message,
            );
            probes.push({ at, ms: Date.now() - at, kind, error });
          }
          await sleep(10);
        }
      })();
      // Who holds ACCESS EXCLUSIVE on the delivery log, sampled every 10 ms while the migration runs.
      const exclusive: number[] = [];
      const sampler = (async (): Promise<void> => {
        const s = new Client({ connectionString: stack.databaseUrl });
        await s.connect();
        try {
          while (sampling) {
            const r = await s.query(
              `SELECT 1 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
                WHERE l.mode = 'AccessExclusiveLock' AND l.granted AND c.relname LIKE 'webhook\\_%' AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                LIMIT 1`,
            );
            if (r.rowCount) exclusive.push(Date.now());
            await sleep(10);
          }
        } finally {
          await s.end();
        }
      })();
      loops.push(ingest, probe, sampler);

      // 3. The partitioning migration, while the old build delivers and writes.
      await waitFor(() => receiver.on('/conv').length >= RATE, 'the old build delivering', 60_000);
      // The operator's step before deploying on a large log (docs/delivery-log.md, "The migration"):
      // the new unique indexes built CONCURRENTLY, so the migration builds none while writes wait.
      for (const statement of prebuildStatements()) await db.query(statement);
      if (STOP_OLD_WORKER) await oldWorker.stop('SIGTERM');
      const migrationStarted = Date.now();
      const applied = await runMigrations(stack.databaseUrl);
      const migrationEnded = Date.now();
      sampling = false;
      await sampler;
      expect(applied).toContain('DeliveryLogPartitions1763801000000');
      result.figure('migrations run while delivering', `${applied.join(', ')} in ${((migrationEnded - migrationStarted) / 1000).toFixed(1)} s`);
      const during = probes.filter((p) => p.at + p.ms >= migrationStarted && p.at <= migrationEnded);
      const longest = Math.max(0, ...during.map((p) => p.ms));
      result.figure(
        'probe statements during the migration (INSERT / read by id): count, p50 / p99 / max',
        (['insert', 'read'] as const)
          .map((kind) => {
            const ms = during.filter((p) => p.kind === kind).map((p) => p.ms);
            return `${kind} ${fmt(ms.length)}, ${fmt(percentile(ms, 50))} / ${fmt(percentile(ms, 99))} / ${fmt(Math.max(0, ...ms))} ms`;
          })
          .join('; '),
      );
      result.figure('longest wait of a concurrent statement (bound)', `${fmt(longest)} ms (< ${fmt(LOCK_BOUND_MS)} ms)`);
      // Held spans: samples less than 100 ms apart belong to one (a sample takes ~10 ms plus the query).
      const spans: number[] = [];
      exclusive.forEach((at, i) => {
        if (i === 0 || at - exclusive[i - 1] > 100) spans.push(0);
        else spans[spans.length - 1] += at - exclusive[i - 1];
      });
      result.figure(
        'ACCESS EXCLUSIVE on the delivery log seen held (sampled every 10 ms): longest span; spans',
        spans.length ? `${fmt(Math.max(...spans))} ms; ${spans.length} (${exclusive.length} samples)` : 'never seen',
      );

      // Every filled row kept (asserted at the end, after the deliveries).
      const after = await sums(db, fillEnd);
      result.figure(
        'rows before → after (deliveries, attempts, payloads), ids MD5 equal',
        Object.keys(before)
          .map((t) => `${fmt(before[t].count)} → ${fmt(after[t].count)}${before[t].md5 === after[t].md5 ? '' : ' (ids differ)'}`)
          .join('; '),
      );

      // 4. The rolling upgrade: the new build's api and worker start, then the old ones stop.
      const newApi = await ServiceProcess.start({ name: 'partconv-api-new', role: 'api', env: { LOG_LEVEL: 'warn', ...stack.env } });
      extra.push(newApi);
      const newWorker = await ServiceProcess.start({ name: 'partconv-worker-new', role: 'worker', env: { LOG_LEVEL: 'info', ...stack.env } });
      extra.push(newWorker);
      // Drained as a load balancer would: new requests go to the new build, and the old api stops
      // once those already sent to it are answered (stopping it under them reset one in a CI run).
      const sentToOld = [...inFlight];
      target = newApi;
      await Promise.all(sentToOld);
      const oldErrors = [...oldApi.errorLines(), ...oldWorker.errorLines()];
      // The old build's warnings after the migration (a relay that fails is retried: a warning).
      const oldRetries = oldWorker.warningLines().filter((l) => /relay failed/.test(l) && Number(/"time":(\d+)/.exec(l)?.[1]) >= migrationStarted);
      result.figure(
        "the old build's relay failures after the migration (retried, so nothing lost)",
        oldRetries.length ? `${fmt(oldRetries.length)}: ${/"msg":"([^"]*)"/.exec(oldRetries[0])?.[1] ?? ''}` : '0',
      );
      await Promise.all([oldApi.stop('SIGTERM'), oldWorker.stop('SIGTERM')]);
      const received = receiver.on('/conv').length;
      await waitFor(() => receiver.on('/conv').length >= received + 2 * RATE, 'the new build delivering alone', 60_000);
      ingesting = false;
      await ingest;
      probing = false;
      await probe;

      // 5. Every accepted message delivered once.
      const accepted = outcomes.filter((o) => o.status === 200 || o.status === 201);
      const refused = outcomes.filter((o) => !(o.status === 200 || o.status === 201));
      const acceptedIds = new Set(accepted.map((o) => o.messageId!));
      const missing = () => [...acceptedIds].filter((id) => !receiver.messageIds('/conv').has(id));
      try {
        await waitFor(() => missing().length === 0, 'every accepted message at the receiver', 120_000, 500);
      } finally {
        const duplicates = receiver.duplicates('/conv');
        result.lost = missing().length;
        result.duplicates = `${fmt(duplicates.length)} event ids twice or more`;
        result.figure(
          'ingest answers 2xx / other',
          `${fmt(accepted.length)} / ${fmt(refused.length)}${refused.length ? ` (${[...new Set(refused.map((o) => o.status || o.error))].join(', ')})` : ''}`,
        );
        result.figure(
          'requests received / distinct event ids',
          `${fmt(receiver.on('/conv').length)} / ${fmt(new Set(receiver.on('/conv').map((a) => a.eventId)).size)}`,
        );
        result.figure(
          'error lines of the old build while and after it ran beside the migration',
          oldErrors.length ? `${oldErrors.length}: ${oldErrors[0].slice(0, 300)}` : '0',
        );
        result.figure('probe statements that failed', fmt(probes.filter((p) => p.error).length));
      }
      // Old deliveries found through the new build, by id and by evt id.
      const partitions = (
        await db.query(
          `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'webhook_deliveries'::regclass ORDER BY 1`,
        )
      ).rows.map((r) => r.name as string);
      expect(partitions).toContain('webhook_deliveries_history');
      result.figure('partitions of webhook_deliveries after', `${partitions.length}: ${partitions[0]} … ${partitions[partitions.length - 1]}`);
      for (const sample of samples) {
        const detail = await toolOk<{ delivery: { id: string; eventId: string }; envelope: unknown; attempts: unknown[] }>(
          newApi.baseUrl,
          tenant.apiKey,
          'get_webhook_delivery',
          {
            deliveryId: sample.id,
          },
        );
        expect({ id: detail.delivery.id, eventId: detail.delivery.eventId, attempts: detail.attempts.length, envelope: !!detail.envelope }).toEqual({
          id: sample.id,
          eventId: sample.event_id,
          attempts: sample.attempt_count,
          envelope: true,
        });
        const byEvt = await db.query(`SELECT id, tableoid::regclass::text AS partition FROM webhook_deliveries WHERE event_id = $1`, [sample.event_id]);
        expect(byEvt.rows).toEqual([{ id: sample.id, partition: 'webhook_deliveries_history' }]);
      }
      result.figure('old deliveries found after (get_webhook_delivery by id; by evt id on the parent)', `${samples.length} of ${samples.length}`);
      expect(refused).toEqual([]);
      expect(missing()).toEqual([]);
      expect(receiver.duplicates('/conv')).toEqual([]);
      expect(receiver.badSignatures).toBe(0);
      expect(probes.filter((p) => p.error).map((p) => p.error)).toEqual([]);
      expect(longest).toBeLessThan(LOCK_BOUND_MS);

      // 6. Every old row kept.
      expect(after).toEqual(before);
      result.passed = true;
    } finally {
      [ingesting, probing, sampling] = [false, false, false];
      await Promise.allSettled(loops);
      await probeDb.end().catch(() => undefined);
      await db.end();
    }
  });
});

/** The SQL block of docs/delivery-log.md's "The migration": what an operator runs before deploying, one statement at a time. */
function prebuildStatements(): string[] {
  const doc = readFileSync(join(ROOT, 'docs/delivery-log.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## The migration'));
  const block = /```sql\n([\s\S]*?)```/.exec(section);
  if (!block) throw new Error('docs/delivery-log.md has no SQL block under "The migration"');
  return block[1]
    .split(';')
    .map((statement) => statement.trim())
    .filter(Boolean);
}
