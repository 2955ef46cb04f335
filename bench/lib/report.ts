import {
  EraPath,
  EraPathResult,
  FixedRateResult,
  Options,
  Results,
  SaturationResult,
  Scenario10Result,
  Scenario11Result,
  ToolLevelResult,
  windows,
} from './context';

const windowsWarmup = (options: Options) => windows(options).warmup;
import { MachineInfo } from './infra';
import { CpuReport } from './monitor';
import { fmtMb, fmtMs, fmtNum, fmtPct, percentile } from './util';

export const TARGETS = {
  deliveriesPerSec: 2000,
  /** Scenario 5: one PROCESS_ROLE=all process, 10 endpoints. */
  oneProcessDeliveriesPerSec: 1500,
  /** Scenario 6: one endpoint receiving everything. */
  oneEndpointDeliveriesPerSec: 1000,
  oneEndpointKeepPace: 0.98,
  oneEndpointP99Ms: 1000,
  /** Scenario 7: inbound SMS/s from many senders, one api process. */
  ingestPerSec: 1000,
  p99Ms: 250,
  isolationRatio: 0.8,
  toolReqPerSec: 1500,
  toolRatio: 0.5,
  /** Issue 31: tools/call with an OAuth access token against the same call with an API key, same run. */
  oauthRatio: 0.95,
  /** Issue 14: the service's processes (API, worker, PostgreSQL's backends, Redis) per delivery at saturation. */
  cpuMsPerDelivery: 0.8,
  workerRssBytes: 300 * 1024 * 1024,
  /** Issue 33, scenario 8's large org: list_threads one call at a time, and at c=32. */
  listThreadsP50Ms: 10,
  listThreadsP99Ms: 30,
  listThreadsReqPerSec: 1000,
  /** list_threads at c=32 on the large org ÷ on the org of 1,000 threads: within 2×. */
  listThreadsScaleRatio: 0.5,
  /** The other reads on the large org. */
  readP99Ms: 30,
  /** search_messages, a word in 10 % of a million messages. */
  commonWordSearchP95Ms: 100,
  /** Scenario 10: a 2026-07-28 tools/call costs the api at most 5 % more CPU than a 2025-11-25 one. */
  modernOverLegacy: 1.05,
};

/** The service's processes as the monitor names them (`service`: the all-in-one process); the receiver and the harness are the bench's own. */
const SERVICE_PROCESSES = ['api', 'worker', 'service', 'postgres', 'redis'];

/** Milliseconds of CPU per delivery over a pass: the service's processes, and every process the bench measured. */
export function cpuPerDelivery(cpu: CpuReport, deliveriesPerSec: number): { service: number; all: number } {
  const sum = (names: (name: string) => boolean) =>
    Object.entries(cpu.cores)
      .filter(([name, v]) => names(name) && Number.isFinite(v))
      .reduce((total, [, v]) => total + v, 0);
  const perDelivery = (cores: number) => (deliveriesPerSec > 0 ? (cores * 1000) / deliveriesPerSec : Infinity);
  return { service: perDelivery(sum((n) => SERVICE_PROCESSES.includes(n))), all: perDelivery(sum(() => true)) };
}

const status = (ok: boolean | undefined) => (ok === undefined ? 'n/a' : ok ? '**pass**' : '**short**');

function bestBy(levels: ToolLevelResult[], mode: ToolLevelResult['mode']): ToolLevelResult | undefined {
  return levels.filter((l) => l.mode === mode).sort((a, b) => b.reqPerSec - a.reqPerSec)[0];
}

function bareAt(levels: ToolLevelResult[], concurrency: number): ToolLevelResult | undefined {
  return levels.find((l) => l.mode === 'bare' && l.concurrency === concurrency);
}

/** Where the CPU went and what PostgreSQL waited on, in words. */
export function boundBy(cpu: CpuReport, cores: number): string {
  const parts: string[] = [];
  const busy = cpu.machineBusy * 100;
  const consumers = Object.entries(cpu.cores)
    .filter(([, v]) => Number.isFinite(v) && v >= 0.02)
    .sort((a, b) => b[1] - a[1])
    .map(([name, v]) => `${name} ${v.toFixed(2)}`);
  const ours = Object.entries(cpu.cores)
    .filter(([name, v]) => name !== 'redis' && Number.isFinite(v))
    .reduce((a, [, v]) => a + v, 0);
  const others = Math.max(0, cpu.machineBusy * cores - ours - (Number.isFinite(cpu.cores.redis) ? cpu.cores.redis : 0));
  parts.push(
    `The machine's ${cores} cores were ${busy.toFixed(0)} % busy over the window` +
      `${busy >= 90 ? ': CPU-bound' : ''}. Cores used: ${consumers.join(', ')}` +
      ' (redis is the whole shared server; postgres is only the backends serving our database)' +
      `${cores ? `; everything else on the machine (other work, PostgreSQL's own background processes) took about ${others.toFixed(2)} cores` : ''}.`,
  );
  const hot = Object.entries(cpu.cores).find(([name, v]) => (name === 'worker' || name === 'api') && v >= 0.85);
  if (hot) parts.push(`The ${hot[0]} process used ${hot[1].toFixed(2)} of a core: one Node event loop is saturated.`);
  if (cpu.waits.length) {
    parts.push(
      `PostgreSQL: on average ${cpu.activeBackends.toFixed(1)} of our backends active; what they were doing: ` +
        cpu.waits.map((w) => `${w.event} ${(w.share * 100).toFixed(0)} %`).join(', ') +
        '.',
    );
  }
  if (cpu.lockedQueries.length) {
    parts.push(
      'Statements seen waiting on a row or transaction lock: ' +
        cpu.lockedQueries.map((q) => `\`${q.query.replace(/`/g, "'")}…\` ${(q.share * 100).toFixed(0)} %`).join('; ') +
        '.',
    );
  }
  return parts.join(' ');
}

function cpuLine(cpu: CpuReport): string {
  return Object.entries(cpu.cores)
    .filter(([, v]) => Number.isFinite(v))
    .sort((a, b) => b[1] - a[1])
    .map(([name, v]) => `${name} ${v.toFixed(2)}`)
    .join(' · ');
}

function satRow(name: string, r: SaturationResult): string {
  return `| ${name} | ${fmtNum(r.deliveriesPerSec)} | ${fmtNum(r.attemptsPerSec)} | ${fmtNum(r.ingestPerSec)} | ${fmtMs(r.latency.p50)} | ${fmtMs(r.latency.p95)} | ${fmtMs(r.latency.p99)} | ${cpuLine(r.cpu)} |`;
}

export function renderMarkdown(results: Results, options: Options, machine: MachineInfo): string {
  const out: string[] = [];
  const cores = Number(machine.nproc) || 0;
  const { s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11, s12, s13 } = results;
  out.push('# Benchmarks', '');
  out.push(
    '> Written by `npm run bench` (`bench/run.ts`); every run overwrites this file and `docs/benchmarks.svg`. ' +
      'Do not edit by hand: change the harness or rerun it.',
    '',
  );
  out.push(
    `- **Date:** ${results.startedAt.toISOString()} (took ${Math.round(((results.finishedAt ?? new Date()).getTime() - results.startedAt.getTime()) / 1000)} s)`,
  );
  out.push(`- **Command:** \`${options.command}\``);
  out.push(`- **Run:** ${options.quick ? '**quick** (short windows: figures are indicative only)' : 'full'}; scenarios ${options.scenarios.join(', ')}`);
  out.push(
    `- **Metrics:** ${options.scrapeSeconds > 0 ? `every service process's \`GET /metrics\` read every ${options.scrapeSeconds} s throughout, as Prometheus would` : 'not scraped (`--scrape-seconds 0`)'}`,
  );
  out.push('');
  out.push('## Machine', '');
  out.push('| | |', '|---|---|');
  out.push(`| CPUs (\`nproc\`) | ${machine.nproc} |`);
  out.push(`| CPU model | ${machine.cpuModel} |`);
  out.push(`| Memory | ${machine.memory} |`);
  out.push(`| Kernel | ${machine.kernel} |`);
  out.push(`| Node.js | ${machine.node} |`);
  out.push(`| PostgreSQL | ${machine.postgres} |`);
  out.push(`| Redis | ${machine.redis} |`);
  out.push(`| Git commit | \`${machine.commit}\`${machine.dirty ? ` + ${machine.dirty} uncommitted file(s)` : ''} |`);
  out.push(`| Load average at start | ${machine.loadAtStart} |`);
  out.push('');
  out.push(
    'Everything runs on this one machine: PostgreSQL, Redis, the service (one `api` and one `worker` process, ' +
      "`node dist/src/main.js`; one `PROCESS_ROLE=all` process in scenario 5), the receiver (a child process), scenario 10's server on the official MCP SDK (a child process) and the load generator (the harness). " +
      'The "machine busy" figures below count every process on the machine, including other work that was running. ' +
      "Each scenario starts after a `CHECKPOINT`, so that one scenario's write-ahead log does not put a checkpoint in the next one's window.",
    '',
  );

  // ---- summary ----
  out.push('## Summary', '');
  out.push('| Scenario | Figure | Target | Measured | Status |', '|---|---|---|---|---|');
  if (s1) {
    out.push(
      `| 1 Delivery throughput | sustained deliveries/s (${s1.endpoints} endpoints) | ≥ ${fmtNum(TARGETS.deliveriesPerSec)} | ${fmtNum(s1.saturation.deliveriesPerSec)} | ${status(s1.saturation.deliveriesPerSec >= TARGETS.deliveriesPerSec)} |`,
    );
    out.push(
      `| 1 | ratio to the same-run limit (bare client: ${fmtNum(s1.bare.postsPerSec)} POST/s) | reported | ${fmtPct(s1.saturation.deliveriesPerSec / s1.bare.postsPerSec)} | — |`,
    );
    const cpu = cpuPerDelivery(s1.saturation.cpu, s1.saturation.deliveriesPerSec);
    out.push(
      `| 1 | CPU per delivery at saturation: API, worker, PostgreSQL, Redis (with the receiver and load generator) | ≤ ${TARGETS.cpuMsPerDelivery} ms | ${cpu.service.toFixed(2)} ms (${cpu.all.toFixed(2)} ms) | ${status(cpu.service <= TARGETS.cpuMsPerDelivery)} |`,
    );
    out.push(
      `| 1 | p99 commit → receiver at ${s1.fixed.rate} events/s (${fmtNum(s1.fixed.rate * s1.endpoints)} deliveries/s offered) | ≤ ${TARGETS.p99Ms} ms | ${fmtMs(s1.fixed.latency.p99)} | ${status(s1.fixed.latency.p99 <= TARGETS.p99Ms)} |`,
    );
    out.push(
      `| 1 | p99 commit → receiver at ${s1.sustainable.rate} events/s (half the saturation rate) | reported | ${fmtMs(s1.sustainable.latency.p99)} (p50 ${fmtMs(s1.sustainable.latency.p50)}) | — |`,
    );
  }
  if (s2) {
    for (const p of s2.passes) {
      out.push(
        `| 2 Failure isolation | healthy half, other half ${p.kind === 'fail' ? 'answering 500' : `hanging past ${fmtNum(s2.timeoutMs)} ms`} | ≥ 80 % | ${fmtPct(p.ratio)} | ${status(p.ratio >= TARGETS.isolationRatio)} |`,
      );
    }
  }
  if (s3) {
    const raw = bestBy(s3.levels, 'raw');
    const sdk = bestBy(s3.levels, 'sdk');
    if (raw) {
      const bare = bareAt(s3.levels, raw.concurrency);
      out.push(
        `| 3 Tool endpoint | best req/s, raw HTTP (c=${raw.concurrency}) | ≥ ${fmtNum(TARGETS.toolReqPerSec)} | ${fmtNum(raw.reqPerSec)} | ${status(raw.reqPerSec >= TARGETS.toolReqPerSec)} |`,
      );
      if (bare)
        out.push(
          `| 3 | raw HTTP ÷ bare Nest route at c=${raw.concurrency} (${fmtNum(bare.reqPerSec)} req/s) | ≥ 50 % | ${fmtPct(raw.reqPerSec / bare.reqPerSec)} | ${status(raw.reqPerSec / bare.reqPerSec >= TARGETS.toolRatio)} |`,
        );
    }
    const oauth = raw && s3.levels.find((l) => l.mode === 'raw-oauth' && l.concurrency === raw.concurrency);
    if (raw && oauth)
      out.push(
        `| 3 | \`tools/call\` with an OAuth access token ÷ with an API key, raw HTTP at c=${raw.concurrency} (${fmtNum(oauth.reqPerSec)} / ${fmtNum(raw.reqPerSec)} req/s) | ≥ 95 % | ${fmtPct(oauth.reqPerSec / raw.reqPerSec)} | ${status(oauth.reqPerSec / raw.reqPerSec >= TARGETS.oauthRatio)} |`,
      );
    const at64 = s3.levels.find((l) => l.mode === 'raw' && l.concurrency === 64);
    if (at64 && at64 !== raw) {
      out.push(
        `| 3 | req/s, raw HTTP at c=64 (issue 14's figure) | ≥ ${fmtNum(TARGETS.toolReqPerSec)} | ${fmtNum(at64.reqPerSec)} | ${status(at64.reqPerSec >= TARGETS.toolReqPerSec)} |`,
      );
    }
    const hot = bestBy(s3.levels, 'hot');
    if (hot) {
      const bare = bareAt(s3.levels, hot.concurrency);
      out.push(
        `| 3 | best req/s, the agent's hot mix (list_threads, get_thread, get_message, search_messages, reply_to_thread), raw HTTP (c=${hot.concurrency}) | reported | ${fmtNum(hot.reqPerSec)}${bare ? ` (${fmtPct(hot.reqPerSec / bare.reqPerSec)} of the bare route's ${fmtNum(bare.reqPerSec)})` : ''}, p99 ${fmtMs(hot.latency.p99)} | — |`,
      );
    }
    if (sdk) {
      const bare = bareAt(s3.levels, sdk.concurrency);
      out.push(
        `| 3 | best req/s, official MCP SDK client (c=${sdk.concurrency}) | ≥ ${fmtNum(TARGETS.toolReqPerSec)} | ${fmtNum(sdk.reqPerSec)}${bare ? ` (${fmtPct(sdk.reqPerSec / bare.reqPerSec)} of bare)` : ''} | ${status(sdk.reqPerSec >= TARGETS.toolReqPerSec)} |`,
      );
    }
  }
  if (s4) {
    const scaled = s4.target !== 100_000 ? ` (${fmtNum(s4.target)}-delivery backlog; the target is for 100,000)` : '';
    out.push(
      `| 4 Backlog memory | worker RSS with ${fmtNum(s4.waiting)} deliveries waiting${scaled} | ≤ ${fmtMb(TARGETS.workerRssBytes)} | ${fmtMb(s4.worker.rss)} (peak ${fmtMb(s4.worker.hwm)}) | ${s4.complete ? status(s4.worker.rss <= TARGETS.workerRssBytes) : '**incomplete**'} |`,
    );
    out.push(`| 4 | API RSS | reported | ${fmtMb(s4.api.rss)} (peak ${fmtMb(s4.api.hwm)}) | — |`);
  }
  if (s5) {
    out.push(
      `| 5 One process | deliveries/s (${s5.endpoints} endpoints), one \`PROCESS_ROLE=all\` process | ≥ ${fmtNum(TARGETS.oneProcessDeliveriesPerSec)} | ${fmtNum(s5.saturation.deliveriesPerSec)} | ${status(s5.saturation.deliveriesPerSec >= TARGETS.oneProcessDeliveriesPerSec)} |`,
    );
  }
  if (s6) {
    const keep = keepPace(s6.unthrottled);
    out.push(
      `| 6 One endpoint | saturation deliveries/s, paced by ingest (one event, one delivery) | ≥ ${fmtNum(TARGETS.oneEndpointDeliveriesPerSec)} | ${fmtNum(s6.saturation.deliveriesPerSec)} | ${status(s6.saturation.deliveriesPerSec >= TARGETS.oneEndpointDeliveriesPerSec)} |`,
    );
    out.push(
      `| 6 | ingest unthrottled (${fmtNum(s6.unthrottled.ingestPerSec)} events/s): arrivals ÷ events | ≥ ${fmtPct(TARGETS.oneEndpointKeepPace)} | ${fmtPct(keep)} | ${status(keep >= TARGETS.oneEndpointKeepPace)} |`,
    );
    out.push(
      `| 6 | p99 commit → receiver, ingest unthrottled | ≤ ${fmtNum(TARGETS.oneEndpointP99Ms)} ms | ${fmtMs(s6.unthrottled.latency.p99)} | ${status(s6.unthrottled.latency.p99 <= TARGETS.oneEndpointP99Ms)} |`,
    );
  }
  if (s7) {
    out.push(
      `| 7 Ingest | inbound SMS/s from ${fmtNum(s7.manySenders.senders)} senders, one api process | ≥ ${fmtNum(TARGETS.ingestPerSec)} | ${fmtNum(s7.manySenders.perSec)} | ${status(s7.manySenders.perSec >= TARGETS.ingestPerSec)} |`,
    );
    out.push(`| 7 | inbound SMS/s from one sender (one thread) | reported | ${fmtNum(s7.oneSender.perSec)} | — |`);
  }
  if (s8) {
    const org = `${fmtNum(s8.threads)} threads, ${fmtNum(s8.messages)} messages`;
    for (const read of s8.reads) {
      if (read.kind === 'list_threads') {
        const ok = read.latency.p50 <= TARGETS.listThreadsP50Ms && read.latency.p99 <= TARGETS.listThreadsP99Ms;
        out.push(
          `| 8 Large org | ${read.label} p50 / p99 (${org}) | ≤ ${TARGETS.listThreadsP50Ms} / ${TARGETS.listThreadsP99Ms} ms | ${fmtMs(read.latency.p50)} / ${fmtMs(read.latency.p99)} | ${status(ok)} |`,
        );
      } else {
        out.push(`| 8 | ${read.label} p99 | ≤ ${TARGETS.readP99Ms} ms | ${fmtMs(read.latency.p99)} | ${status(read.latency.p99 <= TARGETS.readP99Ms)} |`);
      }
    }
    const [small, large] = s8.throughput;
    if (large) {
      out.push(
        `| 8 | list_threads req/s at c=${large.concurrency}, ${fmtNum(large.threads)} threads | ≥ ${fmtNum(TARGETS.listThreadsReqPerSec)} | ${fmtNum(large.reqPerSec)} | ${status(large.reqPerSec >= TARGETS.listThreadsReqPerSec)} |`,
      );
      if (small)
        out.push(
          `| 8 | list_threads req/s at ${fmtNum(large.threads)} threads ÷ at ${fmtNum(small.threads)} (${fmtNum(small.reqPerSec)} req/s) | ≥ 50 % | ${fmtPct(large.reqPerSec / small.reqPerSec)} | ${status(large.reqPerSec / small.reqPerSec >= TARGETS.listThreadsScaleRatio)} |`,
        );
      if (s8.bare)
        out.push(
          `| 8 | list_threads req/s at c=${large.concurrency} ÷ the same-run limit: a bare Nest route running its statement and answer, ${fmtNum(large.threads)} threads (${fmtNum(s8.bare.reqPerSec)} req/s) | reported | ${fmtPct(large.reqPerSec / s8.bare.reqPerSec)} | — |`,
        );
    }
    for (const shape of s8.shapes) {
      const common = shape.label === 'word in 10 %';
      out.push(
        `| 8 Search | search_messages p50 / ${common ? 'p95' : 'p99'}, ${shape.label} (~${shape.matches} of ${fmtNum(s8.messages)} messages) | ${common ? `p95 ≤ ${TARGETS.commonWordSearchP95Ms} ms` : 'reported'} | ${fmtMs(shape.latency.p50)} / ${fmtMs(common ? shape.latency.p95 : shape.latency.p99)} | ${common ? status(shape.latency.p95 <= TARGETS.commonWordSearchP95Ms) : '—'} |`,
      );
    }
  }
  if (s9) {
    out.push(
      `| 9 Live | commit → live stream p50 / p99, ${fmtNum(s9.streams)} streams, ${fmtNum(s9.rate)} inbound SMS/s | reported | ${fmtMs(s9.latency.p50)} / ${fmtMs(s9.latency.p99)} | — |`,
    );
  }
  if (s10) out.push(...erasSummary(s10));
  if (s11) out.push(...eventsSummary(s11));
  if (s12)
    out.push(
      `| 12 | thread page (${s12.messages} messages, ${s12.attachments} attachments), one request at a time, p50 / p99 | reported | ${fmtMs(s12.latency.p50)} / ${fmtMs(s12.latency.p99)} | — |`,
    );
  if (s13) {
    const ratio = s13.medianPolicy / s13.medianNone;
    out.push(
      `| 13 Sends | send_sms/s (c=${s13.concurrency}), median of ${s13.passes.length / 2} rounds, without a send policy | reported | ${fmtNum(s13.medianNone)} | — |`,
      s13.policyApplied
        ? `| 13 | with a policy binding every send ÷ without | ≥ 90 % | ${(ratio * 100).toFixed(1)} % (${fmtNum(s13.medianPolicy)}) | ${ratio >= 0.9 ? '**pass**' : '**short**'} |`
        : `| 13 | with a policy binding every send ÷ without | ≥ 90 % | this build has no send policies | — |`,
    );
  }
  for (const e of results.errors)
    out.push(`| ${e.scenario} | **failed to run** | | ${e.message.split('\n')[0].replace(/\|/g, '\\|').slice(0, 160)} | **error** |`);
  out.push('', '![Throughput against its limit, latency percentiles against 250 ms, worker memory against 300 MB](benchmarks.svg)', '');

  // ---- scenario 1 ----
  if (s1) {
    out.push('## 1. Delivery throughput', '');
    out.push(
      `Inbound SMS are POSTed to \`/ingest/sms/inbound\` (ingest token) by an undici Pool of ${s1.ingestConcurrency} connections. ` +
        `Each one is stored, publishes \`message.received\` through the outbox, and fans out to ${s1.endpoints} endpoints ` +
        `(registered with \`register_webhook\` by ${s1.users} users who all see the line, mode \`${options.mode}\`, ${options.smsBytes}-byte SMS). ` +
        `The worker (\`DELIVERY_CONCURRENCY=${s1.deliveryConcurrency}\`) signs and POSTs each delivery to the receiver, ` +
        'which listens on one port per endpoint (each endpoint its own origin, as with real subscribers), verifies every signature ' +
        "with the project's receiver helper and records the envelope id, `createdAt` and its arrival time.",
      '',
    );
    out.push(
      '**Pass 1, saturation.** The generator sends as fast as it can, but pauses while too many deliveries are owed and not yet arrived: ' +
        `more than ${fmtNum(4 * options.deliveryConcurrency)} (4 × DELIVERY_CONCURRENCY) or 1.5 s of arrivals at the current rate, whichever is larger, ` +
        `at most ${fmtNum(options.backlogCap)}. That keeps every worker slot busy while the queue stays short, so the latency means something. ` +
        `Deliveries/s are counted at the receiver over ${s1.saturation.seconds} s after a ${fmtNum(windowsWarmup(options) / 1000)} s warm-up.`,
      '',
    );
    out.push('| Pass | deliveries/s (2xx) | attempts/s | ingest events/s | p50 | p95 | p99 | cores used |', '|---|---|---|---|---|---|---|---|');
    out.push(satRow('saturation', s1.saturation));
    out.push('');
    out.push(
      fixedPassText(
        'Pass 2, at half the saturation rate',
        s1.sustainable,
        s1.endpoints,
        'the event rate this run sustains, halved: latency where the service keeps up',
      ),
      '',
    );
    out.push(fixedPassText('Pass 3, the target rate', s1.fixed, s1.endpoints, 'the target'), '');
    out.push(
      `**The limit.** The same receiver driven directly by a bare undici client, replaying ${s1.bare.samples} real signed bodies and headers ` +
        `captured from pass 3 (about ${fmtNum(s1.bare.avgBodyBytes)} bytes each) to the same endpoint ports, one Pool of 64 connections per ` +
        `origin like the service's sender, ${s1.bare.concurrency} requests in flight like the worker, with the service stopped: **${fmtNum(s1.bare.postsPerSec)} POST/s** ` +
        `(p99 ${fmtMs(s1.bare.latency.p99)}, ${s1.bare.errors} errors). Our rate is **${fmtPct(s1.saturation.deliveriesPerSec / s1.bare.postsPerSec)}** of it. ` +
        `Cores used: ${cpuLine(s1.bare.cpu)}.`,
      '',
    );
    out.push(
      `Signatures verified by the receiver during passes 1 to 3: ${fmtNum(s1.signatures.verified)}, bad: ${s1.signatures.bad}${s1.signatures.badExamples.length ? ` (${s1.signatures.badExamples.join('; ')})` : ''}.`,
      '',
    );
    out.push(`**What bounds us.** Pass 1: ${boundBy(s1.saturation.cpu, cores)}`, '');
    if (s1.fixed.latency.p99 > TARGETS.p99Ms) out.push(`Pass 3: ${boundBy(s1.fixed.cpu, cores)}`, '');
  }

  // ---- scenario 2 ----
  if (s2) {
    out.push('## 2. Failure isolation', '');
    out.push(
      `Same setup as scenario 1 with half the endpoints failing; \`DELIVERY_TIMEOUT_MS=${s2.timeoutMs}\`, ` +
        `${s2.endpointConcurrency === undefined ? '' : `\`DELIVERY_ENDPOINT_CONCURRENCY=${s2.endpointConcurrency}\`, `}` +
        `\`DELIVERY_RETRY_SCHEDULE=${s2.retrySchedule}\` (compressed, so the failing half's retries land inside the window and compete too). ` +
        `The ratio compares the healthy half's deliveries/s with ${fmtPct(s2.baselineHealthyShare)} of the all-healthy rate ` +
        `(${fmtNum(s2.baselinePerSec)} deliveries/s, from ${s2.baselineFrom}). The load generator's flow control waits for the healthy ` +
        'endpoints only, so the failing half may fall behind (its backlog is reported), as it would with a real failing subscriber.',
      '',
    );
    if (s2.failOkEvery > 0) {
      out.push(
        `The service disables an endpoint after 100 consecutive failures (docs/webhooks.md, "Auto-disable"), which would end the failure after a ` +
          `second. So the receiver answers 200 to every ${s2.failOkEvery}th request of a failing or hanging path, which resets the count: ` +
          `${fmtPct(1 - 1 / s2.failOkEvery)} of their attempts fail and they stay active for the whole window.`,
        '',
      );
    }
    out.push('| Pass | healthy deliveries/s | all attempts/s | ingest events/s | healthy p50 | p95 | p99 | cores used |', '|---|---|---|---|---|---|---|---|');
    for (const p of s2.passes) out.push(satRow(p.kind === 'fail' ? 'half answer 500' : `half hang > ${fmtNum(s2.timeoutMs)} ms`, p.result));
    out.push('');
    for (const p of s2.passes) {
      const name = p.kind === 'fail' ? 'Half answering 500' : 'Half hanging';
      out.push(
        `- **${name}:** healthy half at **${fmtPct(p.ratio)}** of its baseline share; attempts in the pass by path: ` +
          `${Object.entries(p.attemptsByKind)
            .filter(([, n]) => n)
            .map(([k, n]) => `${k} ${fmtNum(n)}`)
            .join(', ')}; ` +
          `${p.autoDisabled} endpoint(s) auto-disabled; ${fmtNum(p.delayedJobsAtEnd)} delayed jobs in Redis at the end (retries, and attempts postponed by the per-endpoint concurrency limit)` +
          `${p.result.owedToFailing !== undefined ? `; the failing half was ${fmtNum(p.result.owedToFailing)} first attempts behind` : ''}` +
          `${p.result.openHangsAvg !== undefined && p.kind === 'hang' ? `; on average ${fmtNum(p.result.openHangsAvg)} requests were held open by the hanging endpoints (of ${options.deliveryConcurrency} worker slots)` : ''}.`,
      );
      if (p.ratio < TARGETS.isolationRatio) {
        const failing = options.endpoints - p.healthyEndpoints;
        // Each endpoint's limit starts at DELIVERY_ENDPOINT_CONCURRENCY and adapts (src/delivery/endpoint-concurrency.ts):
        // errors and timeouts halve it, only 2xx answers grow it, so a hanging endpoint stays at or below its start.
        const initial = s2.endpointConcurrency;
        const heldMax = initial === undefined ? options.deliveryConcurrency : Math.min(options.deliveryConcurrency, failing * initial);
        const slots =
          p.kind === 'hang' && p.result.openHangsAvg !== undefined
            ? `The hanging endpoints held ${fmtNum(p.result.openHangsAvg)} of the worker's ${options.deliveryConcurrency} delivery slots on average ` +
              `(each hang keeps its slot for the whole ${fmtNum(s2.timeoutMs)} ms timeout; ` +
              `${initial === undefined ? 'no per-endpoint limit known' : `each endpoint's limit starts at DELIVERY_ENDPOINT_CONCURRENCY=${initial} and timeouts halve it, so ${failing} hanging endpoints hold at most ${heldMax}`}), ` +
              `leaving ${fmtNum(options.deliveryConcurrency - heldMax)} or more for the healthy half. `
            : '';
        out.push(`  What bounds us: ${slots}${boundBy(p.result.cpu, cores)}`);
      }
    }
    out.push('');
  }

  // ---- scenario 3 ----
  if (s3) {
    out.push('## 3. Tool endpoint', '');
    out.push(
      `\`tools/call\` of \`list_webhooks\` and \`get_webhook\`, alternating, for a user with ${s3.endpointsListed} endpoints: through the official ` +
        'MCP SDK client (`@modelcontextprotocol/sdk`, one `Client` with its own Streamable HTTP transport per concurrent caller, connected ' +
        "and having listed the tools before the clock starts, so it validates each result against the tool's output schema) and through raw HTTP (undici Pool, one connection per concurrent caller, JSON-RPC bodies, answers parsed " +
        'and checked). The limit is `bench/bare-app.ts`: a bare Nest app (same Express adapter, pg pool of 20) whose routes do the same ' +
        'read (`SELECT … FROM webhook_endpoints WHERE user_id = $1`, with the channels join) with no auth and no protocol work. ' +
        'One API key drives every level, so the service runs with `MCP_KEY_CONCURRENCY` at the highest level and `MCP_RATE_LIMIT=100000000`: ' +
        'every call still passes the per-key limits (one Redis round trip), but none is refused. ' +
        'Raw HTTP runs twice at each level: with the API key, then with an OAuth access token of the same user (Dynamic Client Registration, ' +
        'sign-in and consent to All channels with every permission, as the key has), which the service resolves to the same caller (issue 31: within 5 %). ' +
        'The hot mix is what an agent calls on its conversations, raw HTTP with the API key, one call in five each: `list_threads` (first page), ' +
        '`get_thread`, `get_message` (random ones), `search_messages` (a word in 0.1 % or in 10 % of the messages, in turn) and `reply_to_thread` ' +
        '(an SMS the worker then hands on), on a line of 2,000 threads and 20,000 messages.',
      '',
    );
    out.push(
      '| Concurrency | MCP SDK req/s | p99 | raw HTTP req/s | p99 | raw HTTP, OAuth token req/s | p99 | hot mix req/s | p99 | bare Nest req/s | p99 | raw ÷ bare | hot mix ÷ bare | OAuth ÷ key |',
      '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    );
    const levelsSeen = [...new Set(s3.levels.map((l) => l.concurrency))];
    for (const c of levelsSeen) {
      const get = (mode: ToolLevelResult['mode']) => s3.levels.find((l) => l.concurrency === c && l.mode === mode);
      const sdk = get('sdk');
      const raw = get('raw');
      const oauth = get('raw-oauth');
      const bare = get('bare');
      const hot = get('hot');
      const cell = (r?: ToolLevelResult) => (r ? `${fmtNum(r.reqPerSec)}${r.errors ? ` (${r.errors} errors)` : ''} | ${fmtMs(r.latency.p99)}` : 'n/a | n/a');
      const ratio = (a?: ToolLevelResult, b?: ToolLevelResult) => (a && b ? fmtPct(a.reqPerSec / b.reqPerSec) : 'n/a');
      out.push(
        `| ${c} | ${cell(sdk)} | ${cell(raw)} | ${cell(oauth)} | ${cell(hot)} | ${cell(bare)} | ${ratio(raw, bare)} | ${ratio(hot, bare)} | ${ratio(oauth, raw)} |`,
      );
    }
    out.push('');
    const hotLevels = s3.levels.filter((l) => l.mode === 'hot' && l.perTool);
    if (hotLevels.length) {
      out.push("**The hot mix, by tool** (each call's own duration, p50 / p99):", '');
      const tools = hotLevels[0].perTool!.map((t) => t.tool);
      out.push(`| Concurrency | ${tools.join(' | ')} |`, `|---|${tools.map(() => '---|').join('')}`);
      for (const level of hotLevels) {
        const cells = tools.map((tool) => {
          const t = level.perTool!.find((p) => p.tool === tool);
          return t ? `${fmtMs(t.latency.p50)} / ${fmtMs(t.latency.p99)}` : 'n/a';
        });
        out.push(`| ${level.concurrency} | ${cells.join(' | ')} |`);
      }
      out.push('');
    }
    const raw = bestBy(s3.levels, 'raw');
    if (raw) out.push(`**What bounds us** (raw HTTP at c=${raw.concurrency}): ${boundBy(raw.cpu, cores)}`, '');
    const sdk = bestBy(s3.levels, 'sdk');
    if (sdk)
      out.push(
        `With the SDK client (c=${sdk.concurrency}) the harness itself used ${(sdk.cpu.cores.harness ?? 0).toFixed(2)} cores: the client's own work competes with the service for this machine's CPUs.`,
        '',
      );
  }

  // ---- scenario 4 ----
  if (s4) {
    out.push('## 4. Backlog memory', '');
    out.push(
      `${fmtNum(s4.events)} inbound events × 10 endpoints answering 500 with \`DELIVERY_RETRY_SCHEDULE=1h\`: every delivery fails its first ` +
        `attempt and waits an hour for its retry. ${s4.users} users with one line and 10 endpoints each (${fmtNum(s4.endpoints)} endpoints), at most ` +
        `90 events per line, so no endpoint reaches the 100-consecutive-failures auto-disable and every delivery stays waiting. ` +
        `Built in ${s4.buildSeconds.toFixed(0)} s (${fmtNum(s4.firstAttemptsPerSec)} first attempts/s).`,
      '',
    );
    out.push(
      `| | before the backlog | as the last attempt ends | with the backlog, ${s4.settleSeconds} s later (VmRSS) | peak (VmHWM) |`,
      '|---|---|---|---|---|',
    );
    out.push(`| worker process | ${fmtMb(s4.worker.rssBefore)} | ${fmtMb(s4.worker.rssAtOnce)} | **${fmtMb(s4.worker.rss)}** | ${fmtMb(s4.worker.hwm)} |`);
    out.push(`| API process | ${fmtMb(s4.api.rssBefore)} | | ${fmtMb(s4.api.rss)} | ${fmtMb(s4.api.hwm)} |`);
    out.push('');
    out.push(
      `Deliveries by status: ${Object.entries(s4.statusCounts)
        .map(([k, n]) => `${k} ${fmtNum(n)}`)
        .join(', ')}; ${s4.autoDisabled} endpoint(s) disabled. ` +
        `Redis: ${fmtNum(s4.redis.delayed)} delayed jobs; our keys (${fmtNum(s4.redis.prefixKeys)}) take ${fmtMb(s4.redis.prefixBytes)} by \`MEMORY USAGE\`; ` +
        `the server's \`used_memory\` went from ${fmtMb(s4.redis.usedBefore)} to ${fmtMb(s4.redis.usedAfter)} (a shared server: other runs count there too).`,
      '',
    );
  }

  // ---- method ----
  if (s5) {
    out.push('## 5. One process', '');
    out.push(
      "Scenario 1's saturation pass (same load, flow control and receiver) against the service as `npm start` runs it: one " +
        '`PROCESS_ROLE=all` process, where the API, the outbox relay and the delivery worker share one Node event loop, ' +
        'logging at the default level (`LOG_LEVEL=info`, JSON) where the other scenarios use `warn`.',
      '',
    );
    out.push('| Pass | deliveries/s (2xx) | attempts/s | ingest events/s | p50 | p95 | p99 | cores used |', '|---|---|---|---|---|---|---|---|');
    out.push(satRow('saturation', s5.saturation), '');
    out.push(`**What bounds us.** ${boundBy(s5.saturation.cpu, cores)}`, '');
  }
  if (s6) {
    out.push('## 6. One endpoint', '');
    out.push(
      'Every inbound SMS fans out to one endpoint (api + worker processes). Pass 1 keeps the queue short as scenario 1 does: what ' +
        'one endpoint can be sent. Pass 2 sends inbound SMS as fast as the ingest connections go, with no flow control: ' +
        '"arrivals ÷ events" is deliveries/s at the receiver over ingest events/s in the same window (below 100 %: the queue grows), ' +
        'and the latency is commit → receiver.',
      '',
    );
    out.push('| Pass | deliveries/s (2xx) | attempts/s | ingest events/s | p50 | p95 | p99 | cores used |', '|---|---|---|---|---|---|---|---|');
    out.push(satRow('saturation', s6.saturation), satRow('ingest unthrottled', s6.unthrottled), '');
    out.push(`**What bounds us (pass 1).** ${boundBy(s6.saturation.cpu, cores)}`, '');
  }
  if (s7) {
    out.push('## 7. Ingest alone', '');
    out.push(
      `Inbound SMS to a line nobody subscribed to (nothing to deliver), over ${s7.concurrency} connections as fast as they go, ` +
        'against one `api` process (its worker runs beside it). From many senders every message starts its own thread; from one ' +
        "sender every message goes to the same thread, whose row each insert updates (the thread's last message and count), so " +
        'they wait for one another.',
      '',
    );
    out.push('| Pass | inbound SMS/s | request p50 | p95 | p99 | failed | cores used |', '|---|---|---|---|---|---|---|');
    for (const [name, p] of [
      [`${fmtNum(s7.manySenders.senders)} senders`, s7.manySenders],
      ['one sender', s7.oneSender],
    ] as const) {
      out.push(
        `| ${name} | ${fmtNum(p.perSec)} | ${fmtMs(p.latency.p50)} | ${fmtMs(p.latency.p95)} | ${fmtMs(p.latency.p99)} | ${fmtNum(p.failed)} | ${cpuLine(p.cpu)} |`,
      );
    }
    out.push('', `**What bounds us (many senders).** ${boundBy(s7.manySenders.cpu, cores)}`, '');
  }
  if (s8) {
    out.push('## 8. Reads on a large org', '');
    out.push(
      `One org of ${fmtNum(s8.threads)} threads and ${fmtNum(s8.messages)} messages (ten per thread, inbound and outbound in turn) on ${s8.lines} lines ` +
        '(three numbers and a mailbox), written with SQL by `test/support/large-org.ts` (the same fill the plan test ' +
        '`test/mcp/read-plans.e2e-spec.ts` checks every read statement on): a label on 20 % of the threads, one on 5 %, one on 0.1 %; a ' +
        'contact for every other partner, every fourth holding two identities; a DRAFT agent per line with a turn on every fifth thread; ' +
        `${fmtNum(s8.deliveries)} webhook deliveries in one endpoint's log. Written in ${s8.fillSeconds.toFixed(0)} s with the search indexes dropped; ` +
        `building both search indexes again, as the migration does, took ${s8.buildSeconds.toFixed(1)} s (messages_search_idx ${fmtNum(s8.indexMb)} MB, ` +
        `table ${fmtNum(s8.tableMb)} MB): writes to the tables wait that long during the migration. Then \`VACUUM ANALYZE\`, as autovacuum would have, ` +
        'and every call over HTTP with the API key of a member of every line (the whole call: HTTP, key, statements, answer).',
      '',
    );
    out.push(`**Each read, one call at a time** (${s8.reads[0]?.calls ?? 0} calls each, random threads and messages):`, '');
    out.push('| Read | p50 | p95 | p99 | max |', '|---|---|---|---|---|');
    for (const read of s8.reads) {
      out.push(`| ${read.label} | ${fmtMs(read.latency.p50)} | ${fmtMs(read.latency.p95)} | ${fmtMs(read.latency.p99)} | ${fmtMs(read.latency.max)} |`);
    }
    out.push('');
    if (s8.throughput.length) {
      out.push('**list_threads under load** (raw JSON-RPC, first page, one API key), on an org of each size in the same run:', '');
      out.push('| Org | concurrency | req/s | p50 | p99 | errors | cores used |', '|---|---|---|---|---|---|---|');
      for (const t of s8.throughput) {
        out.push(
          `| ${fmtNum(t.threads)} threads | ${t.concurrency} | ${fmtNum(t.reqPerSec)} | ${fmtMs(t.latency.p50)} | ${fmtMs(t.latency.p99)} | ${t.errors} | ${cpuLine(t.cpu)} |`,
        );
      }
      const b = s8.bare;
      if (b) {
        out.push(
          `| the limit: a bare Nest route, ${fmtNum(s8.threads)} threads | ${b.concurrency} | ${fmtNum(b.reqPerSec)} | ${fmtMs(b.latency.p50)} | ${fmtMs(b.latency.p99)} | ${b.errors} | ${cpuLine(b.cpu)} |`,
          '',
          `The limit is \`GET /threads\` of \`bench/bare-app.ts\`: the same Express adapter and pg pool of 20, the service's own statement (\`ThreadsRepository.page\`) and rows listed as the tool lists them (\`threadListItem\`), answered as the tool's result carries them (the page and its JSON text: ${fmtNum(b.bytes)} bytes, the tool's whole JSON-RPC answer ${fmtNum(b.toolBytes)}), with no authentication, JSON-RPC, validation, rate limit or logging; it lists the same threads as the tool (checked before the clock starts).`,
        );
      }
      out.push('');
    }
    out.push(`**search_messages**, one call at a time, ${s8.shapes[0]?.calls ?? 0} calls per query shape (snippets of the 20 hits included):`, '');
    out.push('| Query shape | matches | hits per page | p50 | p95 | p99 | max |', '|---|---|---|---|---|---|---|');
    for (const shape of s8.shapes) {
      out.push(
        `| ${shape.label} | ~${shape.matches} | ${shape.hitsPerCall.toFixed(0)} | ${fmtMs(shape.latency.p50)} | ${fmtMs(shape.latency.p95)} | ${fmtMs(shape.latency.p99)} | ${fmtMs(shape.latency.max)} |`,
      );
    }
    out.push('');
  }
  if (s9) {
    const m = s9.memory;
    out.push('## 9. Live updates', '');
    out.push(
      `${fmtNum(s9.streams)} server-sent event streams (\`GET /live/events\`, ${fmtNum(s9.persons)} people signed in, ${fmtNum(s9.streams / s9.persons)} streams each, ` +
        'all members of one line) held open on one `api` process, the relay in its `worker`, while inbound SMS arrive through the ingest route at ' +
        `${fmtNum(s9.rate)} a second for ${s9.seconds} s. Every stream should be told of every message; latency is each \`message.received\` event's ` +
        "`at` (the outbox row's time, as for webhooks) to its arrival at the client, taken on a tenth of the streams. " +
        "The api's used heap is read from its `/metrics` as it is, garbage V8 has not collected yet included, so it rises and falls " +
        'with the collector; the last row is the heap right after a full, compacting collection forced in the api (the bench preloads ' +
        '`bench/lib/heap-preload.js` into it, which collects on a signal; the service has no such route): what the process holds. ' +
        'Under load none is forced, as it would pause the streams being measured.',
      '',
    );
    out.push('| inbound SMS accepted (failed) | events received / expected | p50 | p95 | p99 | max | cores used |', '|---|---|---|---|---|---|---|');
    out.push(
      `| ${fmtNum(s9.accepted)} (${fmtNum(s9.failed)}) | ${fmtNum(s9.received)} / ${fmtNum(s9.expected)} | ${fmtMs(s9.latency.p50)} | ${fmtMs(s9.latency.p95)} | ${fmtMs(s9.latency.p99)} | ${fmtMs(s9.latency.max)} | ${cpuLine(s9.cpu)} |`,
      '',
    );
    const g = s9.heapAfterGc;
    out.push('| api process | before | streams open | under load | streams closed |', '|---|---|---|---|---|');
    out.push(`| RSS | ${fmtMb(m.before.rss)} | ${fmtMb(m.opened.rss)} | ${fmtMb(m.during.rss)} | ${fmtMb(m.after.rss)} |`);
    out.push(`| used heap, as it is | ${fmtMb(m.before.heap)} | ${fmtMb(m.opened.heap)} | ${fmtMb(m.during.heap)} | ${fmtMb(m.after.heap)} |`);
    out.push(`| used heap after a full GC | ${fmtMb(g.before)} | ${fmtMb(g.opened)} | — | ${fmtMb(g.after)} |`, '');
  }
  if (s10) out.push(...erasSection(s10));
  if (s11) out.push(...eventsSection(s11));
  if (s12) out.push(...threadPageSection(s12));
  if (s13) out.push(...sendsSection(s13));
  out.push('## How the figures are taken', '');
  out.push(
    "- **Latency** is the receiver's arrival time (it answers 200 at once, so this is its 2xx) minus the envelope's `createdAt`. `createdAt` is the outbox row's time, PostgreSQL's `now()` " +
      'in the ingest transaction, i.e. when that transaction began, a few milliseconds before it committed: close enough to "the event\'s commit", ' +
      "and if anything it makes our figures slightly worse. Both clocks are this machine's.",
    '- **Deliveries/s** count 2xx answers at the receiver, first arrivals and repeats alike (repeats are reported separately: at-least-once).',
    '- **Cores used** come from `/proc/<pid>/stat` (user + system time) over the measuring window; PostgreSQL is the sum over the backends serving ' +
      'the bench database, its waits are sampled from `pg_stat_activity` every 250 ms.',
    '- **Memory** is `VmRSS` and `VmHWM` from `/proc/<pid>/status` of the `node dist/src/main.js` processes.',
    `- Every run uses a throwaway database (\`mss_bench_<time>\`) and its own Bull key prefix; both are removed at the end. ` +
      'The service processes run with `APP_ENV=development`, `WEBHOOK_ALLOWED_CIDRS=127.0.0.0/8`, `LOG_LEVEL=warn` and generated tokens.',
    '- Run it: `npm run bench` (full, 20 to 30 minutes), `npm run bench:quick` (each scenario about a minute), ' +
      '`npm run bench -- --scenario 3`, `npm run bench -- --help` for every option.',
    '',
  );
  if (results.errors.length) {
    out.push('## Errors', '');
    for (const e of results.errors) out.push(`- Scenario ${e.scenario}: \`${e.message.split('\n')[0]}\``);
    out.push('');
  }
  return out.join('\n');
}

// ---- scenario 11 -----------------------------------------------------------------------------

/** The target of issue 43: an agent waiting on events/poll or events/stream sees an inbound SMS within a second (p95), 100 agents waiting. */
const EVENTS_P95_TARGET_MS = 1000;

function eventsSummary(s11: Scenario11Result): string[] {
  const top = Math.max(...s11.levels);
  return s11.passes
    .filter((p) => p.agents === top)
    .map((p) => {
      const met = p.latency.p95 <= EVENTS_P95_TARGET_MS && p.seen === p.expected;
      return `| 11 Events | inbound SMS → seen by \`events/${p.mode}\`, p95, ${fmtNum(p.agents)} agents | ≤ ${fmtMs(EVENTS_P95_TARGET_MS)} | ${fmtMs(p.latency.p95)} | ${status(met)} |`;
    });
}

function eventsSection(s11: Scenario11Result): string[] {
  const out: string[] = ['## 11. Events for agents', ''];
  out.push(
    `Agents wait for the \`message.received\` events of one phone line, each with an API key of its own holding only the \`webhooks\` ` +
      'permission (so no per-key limit is reached: `EVENT_FEED_LONG_POLLS_PER_KEY`, `EVENT_FEED_STREAMS_PER_KEY` and `MCP_KEY_CONCURRENCY` ' +
      "keep the service's defaults). Pass `poll`: each agent runs an `events/poll` long-poll loop (raw JSON-RPC over POST /api/mcp on a " +
      `keep-alive connection, \`timeoutMs\` ${fmtNum(s11.pollTimeoutMs)}, polling again as soon as an answer comes); pass \`stream\`: each holds an ` +
      `\`events/stream\`. Meanwhile inbound SMS arrive through the ingest route at ${fmtNum(s11.rate)} a second, each numbered in its text. ` +
      'Latency is from sending an SMS to an agent seeing its event, over every agent and every event (every agent should see every one). ' +
      "Memory per stream: the api's RSS and used heap with the streams open minus just before they opened, divided by the streams; " +
      'both states are read right after a full GC forced in the api (as in scenario 9), the used heap once from the collection itself ' +
      "and once from the api's `/metrics` just after it. With one stream the difference is noise; the figure is the one at the most streams.",
    '',
  );
  out.push('| pass | agents | SMS accepted (failed) | seen / expected | p50 | p95 | p99 | max | errors |', '|---|---|---|---|---|---|---|---|---|');
  for (const p of s11.passes) {
    out.push(
      `| \`events/${p.mode}\` | ${fmtNum(p.agents)} | ${fmtNum(p.accepted)} (${fmtNum(p.failed)}) | ${fmtNum(p.seen)} / ${fmtNum(p.expected)} | ${fmtMs(p.latency.p50)} | ${fmtMs(p.latency.p95)} | ${fmtMs(p.latency.p99)} | ${fmtMs(p.latency.max)} | ${p.errors}${p.lastError ? ` (\`${p.lastError.slice(0, 80)}\`)` : ''} |`,
    );
  }
  out.push('');
  const streamed = s11.passes.filter((p) => p.mode === 'stream' && p.memory);
  if (streamed.length) {
    out.push(
      '| streams open | api RSS before → open | per stream | used heap (/metrics) before → open | per stream | heap after the GC before → open | per stream |',
      '|---|---|---|---|---|---|---|',
    );
    for (const p of streamed) {
      const m = p.memory!;
      const per = (a: number, b: number) => `${fmtNum((b - a) / p.agents / 1024, 1)} KB`;
      out.push(
        `| ${fmtNum(p.agents)} | ${fmtMb(m.rssBefore)} → ${fmtMb(m.rssOpened)} | ${per(m.rssBefore, m.rssOpened)} | ${fmtMb(m.heapBefore)} → ${fmtMb(m.heapOpened)} | ${per(m.heapBefore, m.heapOpened)} | ${fmtMb(m.heapAfterGcBefore)} → ${fmtMb(m.heapAfterGcOpened)} | ${per(m.heapAfterGcBefore, m.heapAfterGcOpened)} |`,
      );
    }
    out.push('');
  }
  return out;
}

// ---- scenario 10 -----------------------------------------------------------------------------

const ERA_LABELS: Record<EraPath, string> = {
  legacy: 'service, 2025-11-25',
  modern: 'service, 2026-07-28',
  'sdk-modern': 'official SDK server, 2026-07-28',
  'sdk-legacy': 'official SDK server, 2025-11-25',
};

function eraResult(s10: Scenario10Result, tool: string, concurrency: number, path: EraPath): EraPathResult | undefined {
  return s10.results.find((r) => r.tool === tool && r.concurrency === concurrency && r.path === path);
}

const fmtCpu = (ms: number) => (Number.isFinite(ms) ? `${ms.toFixed(3)} ms` : 'n/a');

/** `median (min – max)` of some values. */
function spread(values: number[], fmt: (v: number) => string): string {
  if (values.length === 0) return 'n/a';
  const sorted = [...values].sort((a, b) => a - b);
  return `${fmt(percentile(sorted, 50))} (${fmt(sorted[0])} – ${fmt(sorted[sorted.length - 1])})`;
}

/** CPU a call of `x` ÷ that of `y`, round by round (the same round ran both, close together). */
function paired(x: EraPathResult, y: EraPathResult): number[] {
  return x.rounds.map((round, i) => round.serverCpuMs / y.rounds[i]?.serverCpuMs).filter(Number.isFinite);
}

/** Scenario 10's rows of the summary: modern ÷ legacy (the target) and the service ÷ the SDK's server, at the highest level. */
function erasSummary(s10: Scenario10Result): string[] {
  const rows: string[] = [];
  const top = Math.max(...s10.levels);
  s10.tools.forEach(({ name }, i) => {
    const legacy = eraResult(s10, name, top, 'legacy');
    const modern = eraResult(s10, name, top, 'modern');
    const sdk = eraResult(s10, name, top, 'sdk-modern');
    if (legacy && modern) {
      const ratio = modern.serverCpuMs / legacy.serverCpuMs;
      rows.push(
        `| ${i === 0 ? '10 Protocol eras' : '10'} | \`tools/call\` ${name}, 2026-07-28 ÷ 2025-11-25: the api's CPU a call at c=${top} (${fmtCpu(modern.serverCpuMs)} / ${fmtCpu(legacy.serverCpuMs)}) | ≤ ${fmtPct(TARGETS.modernOverLegacy)} | ${fmtPct(ratio)} | ${status(ratio <= TARGETS.modernOverLegacy)} |`,
      );
    }
    if (modern && sdk) {
      rows.push(
        `| 10 | ${name}, 2026-07-28, req/s at c=${top}: the service ÷ the official SDK's server (\`createMcpHandler\`) on the same tool code (${fmtNum(modern.reqPerSec)} / ${fmtNum(sdk.reqPerSec)}; CPU a call ${fmtCpu(modern.serverCpuMs)} / ${fmtCpu(sdk.serverCpuMs)}) | reported | ${fmtPct(modern.reqPerSec / sdk.reqPerSec)} | — |`,
      );
    }
  });
  return rows;
}

/** Scenario 10's section. */
function erasSection(s10: Scenario10Result): string[] {
  const out: string[] = ['## 10. Protocol eras', ''];
  const calls = s10.levels.map((l) => `${fmtNum(s10.calls[l].calls)} at c=${l} (after ${fmtNum(s10.calls[l].warmup)} warm-up calls)`).join(', ');
  out.push(
    '`tools/call` of one read tool, the same arguments with the same API key, on four paths. **The service in 2025-11-25**: each concurrent client first ' +
      "sends `initialize` and `notifications/initialized`, as the v1 SDK's client does, then plain JSON-RPC with `MCP-Protocol-Version: 2025-11-25`. " +
      '**The service in 2026-07-28**: no handshake; every request carries the `_meta` envelope the official v2 client sends (protocol version, clientInfo, ' +
      'clientCapabilities `{}`) and the `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers, which the service checks against the body; ' +
      "every result carries `resultType` and the server's identity in `_meta`. **The peer to beat**, `bench/sdk-peer.ts`: a server built on the official " +
      'v2 SDK, `createMcpHandler` (`@modelcontextprotocol/server` 2.4.0) on `node:http` through `toNodeHandler` (`@modelcontextprotocol/node` 2.1.2), in both eras ' +
      "(2025-era requests go to its stateless fallback, a fresh server per request, as 2026-07-28 ones get). Only its protocol layer is the SDK's: it boots a " +
      "Nest application context of the service's own build (`dist/`, `PROCESS_ROLE=api`), and a call goes through the service's API-key lookup (the same " +
      "batched statement), its running-call slot and rate limit (one Redis round trip), the tool's permission rule, its compiled argument validator " +
      '(handed to the SDK through `fromJsonSchema`), its handler and `visibleResult`: every path answers the same `structuredContent` (checked before the clock). ' +
      "The peer is spared what the service's HTTP stack does besides: Express and Nest's router and guards, pino-http's request log, the HTTP and per-call " +
      'metrics, the Origin check.',
    '',
  );
  out.push(
    'One load generator for all four (undici, raw HTTP, one connection per concurrent caller; every answer parsed and checked, server-sent events included). ' +
      `Each path gets the same number of calls at each level: ${calls}, in each of ${s10.rounds} rounds, whose orders make a Williams square ` +
      '(every path takes every place in a round, and follows every other path, equally often), so a machine that grows busier or quieter weighs on ' +
      "every path alike and no path always follows the same one (a path after the peer's starts on an api that idled). **CPU a call** is the serving process's user + system time " +
      "over its windows (`/proc/<pid>/stat`: the service's `api`, or the peer) ÷ its calls; PostgreSQL's is its backends serving the bench database, " +
      "the load generator's the harness's own. Tools: " +
      s10.tools.map((t) => `\`${t.name}\` (${t.name === 'list_webhooks' ? "the caller's 10 endpoints" : 'one thread of ten messages'})`).join(', ') +
      '.',
    '',
  );
  out.push(
    '| Tool | c | Path | req/s | p50 | p99 | CPU a call: server | PostgreSQL | load generator | server CPU a call, rounds: median (min – max) | request / answer bytes | errors |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
  );
  for (const { name } of s10.tools) {
    for (const level of s10.levels) {
      for (const path of Object.keys(ERA_LABELS) as EraPath[]) {
        const r = eraResult(s10, name, level, path);
        if (!r) continue;
        const size = s10.sizes.find((x) => x.tool === name && x.path === path);
        out.push(
          `| ${name} | ${level} | ${ERA_LABELS[path]} | ${fmtNum(r.reqPerSec)} | ${fmtMs(r.latency.p50)} | ${fmtMs(r.latency.p99)} | ${fmtCpu(r.serverCpuMs)} | ` +
            `${fmtCpu(r.postgresCpuMs)} | ${fmtCpu(r.harnessCpuMs)} | ${spread(
              r.rounds.map((x) => x.serverCpuMs),
              (v) => v.toFixed(3),
            )} | ` +
            `${size ? `${fmtNum(size.requestBytes)} / ${fmtNum(size.answerBytes)}` : 'n/a'} | ${r.errors ? `${r.errors} (${r.lastError ?? ''})` : '0'} |`,
        );
      }
    }
  }
  out.push('');
  const ratios = (title: string, a: EraPath, b: EraPath) => {
    out.push(title, '');
    out.push('| Tool | c | CPU a call | CPU a call, round by round: median (min – max) | req/s | p50 | p99 |', '|---|---|---|---|---|---|---|');
    for (const { name } of s10.tools) {
      for (const level of s10.levels) {
        const x = eraResult(s10, name, level, a);
        const y = eraResult(s10, name, level, b);
        if (!x || !y) continue;
        out.push(
          `| ${name} | ${level} | ${fmtPct(x.serverCpuMs / y.serverCpuMs)} | ${spread(paired(x, y), fmtPct)} | ${fmtPct(x.reqPerSec / y.reqPerSec)} | ` +
            `${fmtPct(x.latency.p50 / y.latency.p50)} | ${fmtPct(x.latency.p99 / y.latency.p99)} |`,
        );
      }
    }
    out.push('');
  };
  ratios(`**The service, 2026-07-28 ÷ 2025-11-25** (target: CPU a call ≤ ${fmtPct(TARGETS.modernOverLegacy)}):`, 'modern', 'legacy');
  ratios(
    "**The service ÷ the official SDK's server, both in 2026-07-28** (below 100 % the service spends less CPU a call, above it serves more calls a second):",
    'modern',
    'sdk-modern',
  );
  ratios("**The service ÷ the official SDK's server, both in 2025-11-25:**", 'legacy', 'sdk-legacy');
  return out;
}

// ---- SVG --------------------------------------------------------------------------------------

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

interface BarRow {
  label: string;
  ours: number;
  limit?: number;
  limitLabel?: string;
  target?: number;
}

/** Hand-written SVG: throughput vs limit (log scale), latency percentiles vs 250 ms, worker RSS vs 300 MB. */
export function renderSvg(results: Results): string {
  const { s1, s2, s3, s4 } = results;
  const W = 960;
  const parts: string[] = [];
  let y = 0;
  const font = 'font-family="Helvetica, Arial, sans-serif"';
  const text = (x: number, yy: number, s: string, opts = '') =>
    parts.push(`<text x="${x.toFixed(1)}" y="${yy.toFixed(1)}" ${font}${opts.includes('font-size') ? '' : ' font-size="12"'} ${opts}>${esc(s)}</text>`);

  // Panel 1: throughput.
  const rows: BarRow[] = [];
  if (s1)
    rows.push({
      label: 'S1 deliveries/s',
      ours: s1.saturation.deliveriesPerSec,
      limit: s1.bare.postsPerSec,
      limitLabel: 'bare client POST/s',
      target: TARGETS.deliveriesPerSec,
    });
  if (s2) {
    const share = s2.baselinePerSec * s2.baselineHealthyShare;
    for (const p of s2.passes)
      rows.push({
        label: `S2 healthy half (${p.kind === 'fail' ? '500s' : 'hangs'})`,
        ours: p.result.deliveriesPerSec,
        limit: share,
        limitLabel: 'its all-healthy share',
        target: share * TARGETS.isolationRatio,
      });
  }
  if (s3) {
    for (const mode of ['raw', 'sdk'] as const) {
      const best = bestBy(s3.levels, mode);
      if (!best) continue;
      const bare = bareAt(s3.levels, best.concurrency);
      rows.push({
        label: `S3 ${mode === 'raw' ? 'raw HTTP' : 'MCP SDK'} req/s (c=${best.concurrency})`,
        ours: best.reqPerSec,
        limit: bare?.reqPerSec,
        limitLabel: 'bare Nest route',
        target: TARGETS.toolReqPerSec,
      });
    }
  }
  const left = 250;
  const right = W - 30;
  const lo = 1;
  const hi = 5; // 10 .. 100,000
  const xOf = (v: number) => left + ((Math.log10(Math.max(10, Math.min(v, 10 ** hi))) - lo) / (hi - lo)) * (right - left);
  y = 30;
  parts.push(`<text x="20" y="${y}" ${font} font-size="16" font-weight="bold">Throughput against its limit (log scale)</text>`);
  y += 16;
  text(20, y, 'blue: ours · grey: the limit measured in the same run · red tick: target', 'fill="#555"');
  y += 14;
  const axisTop = y;
  const rowH = 34;
  const axisBottom = axisTop + Math.max(1, rows.length) * rowH + 6;
  for (let e = lo; e <= hi; e += 1) {
    const x = xOf(10 ** e);
    parts.push(`<line x1="${x}" y1="${axisTop}" x2="${x}" y2="${axisBottom}" stroke="#ddd"/>`);
    text(x - 12, axisBottom + 14, fmtNum(10 ** e), 'fill="#777" font-size="11"');
  }
  rows.forEach((r, i) => {
    const top = axisTop + 4 + i * rowH;
    text(20, top + 18, r.label);
    if (r.limit !== undefined && Number.isFinite(r.limit)) {
      parts.push(`<rect x="${left}" y="${top + 15}" width="${Math.max(1, xOf(r.limit) - left)}" height="11" fill="#b8b8b8"/>`);
      text(xOf(r.limit) + 4, top + 25, `${fmtNum(r.limit)} ${r.limitLabel ?? ''}`, 'fill="#666" font-size="10"');
    }
    parts.push(`<rect x="${left}" y="${top + 2}" width="${Math.max(1, xOf(r.ours) - left)}" height="12" fill="#2b6cb0"/>`);
    text(xOf(r.ours) + 4, top + 12, fmtNum(r.ours), 'fill="#2b6cb0" font-size="11" font-weight="bold"');
    if (r.target !== undefined) {
      const x = xOf(r.target);
      parts.push(`<line x1="${x}" y1="${top}" x2="${x}" y2="${top + 28}" stroke="#c53030" stroke-width="2"/>`);
    }
  });
  if (rows.length === 0) text(left, axisTop + 20, 'no throughput scenario in this run', 'fill="#777"');
  y = axisBottom + 40;

  // Panel 2: latency.
  const lat: Array<{ label: string; p: { p50: number; p95: number; p99: number } }> = [];
  if (s1) {
    lat.push({ label: `S1 at ${s1.fixed.rate} events/s`, p: s1.fixed.latency });
    lat.push({ label: `S1 at ${s1.sustainable.rate} events/s`, p: s1.sustainable.latency });
    lat.push({ label: 'S1 saturation (bounded queue)', p: s1.saturation.latency });
  }
  if (s2) for (const p of s2.passes) lat.push({ label: `S2 healthy, ${p.kind === 'fail' ? '500s' : 'hangs'}`, p: p.result.latency });
  parts.push(`<text x="20" y="${y}" ${font} font-size="16" font-weight="bold">Latency, commit → receiver (ms, log scale)</text>`);
  y += 16;
  text(20, y, 'p50 · p95 · p99 per pass; red line: the 250 ms target for p99 at 200 events/s', 'fill="#555"');
  y += 14;
  const lTop = y;
  const lRowH = 44;
  const lBottom = lTop + Math.max(1, lat.length) * lRowH + 4;
  const mlo = 0;
  const mhi = 5; // 1 ms .. 100 s
  const mx = (v: number) => left + ((Math.log10(Math.max(1, Math.min(Number.isFinite(v) ? v : 10 ** mhi, 10 ** mhi))) - mlo) / (mhi - mlo)) * (right - left);
  for (let e = mlo; e <= mhi; e += 1) {
    const x = mx(10 ** e);
    parts.push(`<line x1="${x}" y1="${lTop}" x2="${x}" y2="${lBottom}" stroke="#ddd"/>`);
    text(x - 10, lBottom + 14, e >= 3 ? `${10 ** (e - 3)} s` : `${10 ** e} ms`, 'fill="#777" font-size="11"');
  }
  const colors = { p50: '#90cdf4', p95: '#4299e1', p99: '#2c5282' };
  lat.forEach((row, i) => {
    const top = lTop + 4 + i * lRowH;
    text(20, top + 22, row.label);
    (['p50', 'p95', 'p99'] as const).forEach((k, j) => {
      const v = row.p[k];
      const yy = top + j * 12;
      parts.push(`<rect x="${left}" y="${yy}" width="${Math.max(1, mx(v) - left)}" height="10" fill="${colors[k]}"/>`);
      text(mx(v) + 4, yy + 9, `${k} ${fmtMs(v)}`, 'font-size="10" fill="#333"');
    });
  });
  if (lat.length) {
    const x = mx(TARGETS.p99Ms);
    parts.push(`<line x1="${x}" y1="${lTop - 4}" x2="${x}" y2="${lBottom}" stroke="#c53030" stroke-width="2" stroke-dasharray="5,3"/>`);
    text(x + 3, lTop - 6, '250 ms', 'fill="#c53030" font-size="11"');
  } else text(left, lTop + 20, 'no latency scenario in this run', 'fill="#777"');
  y = lBottom + 40;

  // Panel 3: memory.
  parts.push(`<text x="20" y="${y}" ${font} font-size="16" font-weight="bold">Memory with the retry backlog (MB)</text>`);
  y += 16;
  if (s4) {
    text(20, y, `${fmtNum(s4.waiting)} deliveries waiting; red line: 300 MB worker target`, 'fill="#555"');
    y += 10;
    const maxMb = Math.max(500, s4.worker.hwm / 2 ** 20, s4.api.hwm / 2 ** 20) * 1.1;
    const bx = (mb: number) => left + (Math.min(mb, maxMb) / maxMb) * (right - left);
    const memRows: Array<[string, number, number]> = [
      ['worker RSS / peak', s4.worker.rss, s4.worker.hwm],
      ['API RSS / peak', s4.api.rss, s4.api.hwm],
      ['Redis (our keys)', s4.redis.prefixBytes, s4.redis.prefixBytes],
    ];
    memRows.forEach(([label, rss, hwm], i) => {
      const top = y + 6 + i * 26;
      text(20, top + 14, label);
      parts.push(`<rect x="${left}" y="${top + 4}" width="${Math.max(1, bx(hwm / 2 ** 20) - left)}" height="14" fill="#cbd5e0"/>`);
      parts.push(`<rect x="${left}" y="${top + 4}" width="${Math.max(1, bx(rss / 2 ** 20) - left)}" height="14" fill="#2b6cb0"/>`);
      text(bx(hwm / 2 ** 20) + 4, top + 15, `${fmtMb(rss)}${hwm !== rss ? ` (peak ${fmtMb(hwm)})` : ''}`, 'font-size="11"');
    });
    const x = bx(TARGETS.workerRssBytes / 2 ** 20);
    parts.push(`<line x1="${x}" y1="${y}" x2="${x}" y2="${y + 6 + 2 * 26 + 22}" stroke="#c53030" stroke-width="2" stroke-dasharray="5,3"/>`);
    y += 6 + 3 * 26 + 20;
  } else {
    text(20, y + 4, 'scenario 4 did not run', 'fill="#777"');
    y += 30;
  }
  const date = results.startedAt.toISOString().replace('T', ' ').slice(0, 16);
  text(20, y, `npm run bench, ${date} UTC — see docs/BENCHMARKS.md for the machine and the method`, 'fill="#999" font-size="10"');
  y += 14;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${y}" viewBox="0 0 ${W} ${y}">\n<rect width="${W}" height="${y}" fill="#fff"/>\n${parts.join('\n')}\n</svg>\n`;
}

/** One open-loop pass of scenario 1, as a paragraph. */
/** Deliveries/s over events/s of a one-endpoint pass: 1 when delivery keeps pace with ingest. */
function keepPace(r: SaturationResult): number {
  return r.ingestPerSec > 0 ? r.deliveriesPerSec / r.ingestPerSec : 0;
}

function fixedPassText(title: string, pass: FixedRateResult, endpoints: number, why: string): string {
  return (
    `**${title}: ${fmtNum(pass.rate)} events/s** (${why}; open loop, ${fmtNum(pass.rate * endpoints)} deliveries/s offered) for ${pass.seconds} s: ` +
    `${fmtNum(pass.arrived)} of ${fmtNum(pass.expected)} deliveries arrived (a delivery still missing after the drain wait counts as "never"), ` +
    `${fmtNum(pass.deliveriesPerSec)} deliveries/s; latency p50 ${fmtMs(pass.latency.p50)}, p95 ${fmtMs(pass.latency.p95)}, ` +
    `**p99 ${fmtMs(pass.latency.p99)}**, max ${fmtMs(pass.latency.max)}` +
    `${pass.sent < pass.planned ? `; the ingest could not keep the rate: ${fmtNum(pass.sent)} of ${fmtNum(pass.planned)} events were sent (${fmtNum((pass.sent * pass.rate) / pass.planned)} events/s over the pass)` : ''}. Cores used: ${cpuLine(pass.cpu)}.`
  );
}

/** Scenario 12's section: the thread page's latency. */
function threadPageSection(s12: NonNullable<Results['s12']>): string[] {
  return [
    '## 12. The thread page',
    '',
    `One person signed in; one email thread of ${s12.messages} messages, the newest ${s12.attachments} with a text attachment each, ` +
      'extracted before timing starts. `GET /conversations/:id` (the newest 20 messages, each attachment with its text and download link, ' +
      `the partner's contact, labels, drafts) is asked ${s12.requests} times one after another, after 20 unmeasured requests, ` +
      'on one `all` process; the time is from the request to the last byte of the page.',
    '',
    '| requests | p50 | p95 | p99 | max | mean |',
    '|---|---|---|---|---|---|',
    `| ${s12.requests} | ${fmtMs(s12.latency.p50)} | ${fmtMs(s12.latency.p95)} | ${fmtMs(s12.latency.p99)} | ${fmtMs(s12.latency.max)} | ${fmtMs(s12.mean)} |`,
    '',
  ];
}

/** Scenario 13's section: sends per second without and with a send policy, round by round. */
function sendsSection(s13: NonNullable<Results['s13']>): string[] {
  return [
    '## 13. Sends under a send policy',
    '',
    `Two orgs, each one phone line, one person and one API key: one without a send policy, one whose policy binds every send ` +
      '(limits per credential per hour and day and per recipient per day, quiet hours outside the run, a deny list: every rule checked, ' +
      `none met). \`send_sms\` to a number (raw HTTP \`tools/call\`, c=${s13.concurrency}, ${s13.recipients} numbers in turn), the two ` +
      'sides alternating round by round on one service; every send also writes its audit row. A round ends when the worker has handed off ' +
      "every message it queued: sends/s is the window's sends over the window and that wait (the api's intake alone in brackets). " +
      'The figure is the median of the rounds.',
    '',
    '| side | round | sends/s | p50 | p99 | errors |',
    '|---|---|---|---|---|---|',
    ...s13.passes.map(
      (p) =>
        `| ${p.side === 'none' ? 'no policy' : 'policy'} | ${p.round} | ${fmtNum(p.sendsPerSec)} (${fmtNum(p.intakePerSec)}) | ${fmtMs(p.latency.p50)} | ${fmtMs(p.latency.p99)} | ${p.errors}${p.lastError ? ` (${p.lastError.replace(/\|/g, '\\|').slice(0, 80)})` : ''} |`,
    ),
    '',
  ];
}
