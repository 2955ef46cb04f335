import { execFileSync } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join, resolve } from 'node:path';

/**
 * Each reliability test records its figures here (one JSON line per test in the run's results
 * file); the global teardown renders them into docs/RELIABILITY.md. Tests that did not run this
 * time keep their previous row (the document embeds its data), marked with the date they ran.
 */

export interface ReliabilityResult {
  /** Stable id and order of the row. */
  key: string;
  title: string;
  passed: boolean;
  /** Why the test could not run here (then `passed` is false and the row says "skipped"). */
  skipped?: string;
  ranAt: string;
  durationMs: number;
  /** What load the service held. */
  load: string;
  /** Which faults it survived. */
  faults: string;
  /** Which bad inputs were tried. */
  badInputs: string;
  /** Events committed but never delivered (must be 0); null where the test delivers no events. */
  lost: number | null;
  duplicates: string;
  /** Detailed figures, shown in the test's own section. */
  figures: Array<[string, string | number]>;
  notes?: string[];
}

export const ORDER = [
  'worker-sigkill',
  'scheduled-sigkill',
  'redis-outage',
  'redis-cluster-failover',
  'postgres-restart',
  'partition-conversion',
  'event-feed-faults',
  'replicas',
  'mcp-fuzz',
  'rest-fuzz',
  'url-policy',
  'authz-matrix',
  'abuse-bodies',
  'mcp-flood',
  'web-flood',
  'extraction-bombs',
];

const ROOT = resolve(__dirname, '../../..');
export const DOC = join(ROOT, 'docs/RELIABILITY.md');
const DATA_MARK = '<!-- reliability-data:';

export function resultsFile(): string {
  return process.env.RELIABILITY_RESULTS ?? join(ROOT, 'node_modules/.cache/mss-reliability/results.jsonl');
}

export function recordResult(result: ReliabilityResult): void {
  appendFileSync(resultsFile(), `${JSON.stringify(result)}\n`);
  const lines = [
    `\n=== ${result.title}: ${result.skipped ? `SKIPPED (${result.skipped})` : result.passed ? 'PASSED' : 'FAILED'} in ${(result.durationMs / 1000).toFixed(1)} s`,
  ];
  for (const [name, value] of result.figures) lines.push(`  ${name}: ${value}`);
  for (const note of result.notes ?? []) lines.push(`  note: ${note}`);
  process.stdout.write(`${lines.join('\n')}\n`);
}

/** A helper for a test body: collects figures as it goes, and records them however the test ends. */
export class ResultBuilder {
  readonly started = Date.now();
  passed = false;
  skipped?: string;
  load = '';
  faults = '';
  badInputs = '—';
  lost: number | null = null;
  duplicates = '—';
  readonly figures: Array<[string, string | number]> = [];
  readonly notes: string[] = [];

  constructor(
    readonly key: string,
    readonly title: string,
  ) {}

  figure(name: string, value: string | number): void {
    const existing = this.figures.findIndex(([n]) => n === name);
    if (existing >= 0) this.figures[existing] = [name, value];
    else this.figures.push([name, value]);
  }

  record(): void {
    recordResult({
      key: this.key,
      title: this.title,
      passed: this.passed,
      skipped: this.skipped,
      ranAt: new Date().toISOString(),
      durationMs: Date.now() - this.started,
      load: this.load,
      faults: this.faults,
      badInputs: this.badInputs,
      lost: this.lost,
      duplicates: this.duplicates,
      figures: this.figures,
      notes: this.notes,
    });
  }
}

/** `key × count, ...` in key order: how often each status, kind or route came up. */
export function tally(counts: Map<number, number> | Map<string, number>): string {
  return [...counts]
    .sort((a, b) => (a[0] < b[0] ? -1 : 1))
    .map(([k, n]) => `${k} × ${fmt(n)}`)
    .join(', ');
}

export function fmt(n: number, digits = 0): string {
  return n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

interface Stored {
  results: Record<string, ReliabilityResult>;
  /** The last run of the whole suite. */
  suite?: { finishedAt: string; seconds: number };
}

function readPrevious(): Stored {
  if (!existsSync(DOC)) return { results: {} };
  const text = readFileSync(DOC, 'utf8');
  const at = text.indexOf(DATA_MARK);
  if (at < 0) return { results: {} };
  try {
    return JSON.parse(text.slice(at + DATA_MARK.length, text.indexOf('-->', at)).trim());
  } catch {
    return { results: {} };
  }
}

function versionOf(command: string, args: string[]): string {
  try {
    return execFileSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
      .trim()
      .split('\n')[0];
  } catch {
    return 'unknown';
  }
}

const cell = (text: string | number | null) =>
  String(text ?? '—')
    .replace(/\|/g, '\\|')
    .replace(/\n/g, ' ');

/** Renders docs/RELIABILITY.md from this run's results and the previous document's. */
export function renderDocument(run: { startedAt: number; finishedAt: number }): { written: boolean; results: number } {
  const file = resultsFile();
  const fresh: ReliabilityResult[] = existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as ReliabilityResult)
    : [];
  if (fresh.length === 0) return { written: false, results: 0 };
  const previous = readPrevious();
  const all = previous.results;
  for (const r of fresh) all[r.key] = r;
  const rows = Object.values(all).sort((a, b) => (ORDER.indexOf(a.key) + 1 || 99) - (ORDER.indexOf(b.key) + 1 || 99));
  const freshKeys = new Set(fresh.map((r) => r.key));
  const complete = ORDER.every((k) => freshKeys.has(k));
  const runtime = (run.finishedAt - run.startedAt) / 1000;
  const suite = complete ? { finishedAt: new Date(run.finishedAt).toISOString(), seconds: Math.round(runtime) } : previous.suite;
  const status = (r: ReliabilityResult) => (r.skipped ? 'skipped' : r.passed ? 'pass' : '**FAIL**');

  const out: string[] = [];
  out.push('# Reliability');
  out.push('');
  out.push('What `npm run test:reliability` measured: the load the service held, the faults it survived, the');
  out.push('bad inputs it refused, and that no committed event was lost. The suite runs the service as');
  out.push('production does (separate `api` and `worker` processes of the compiled code) against real');
  out.push('PostgreSQL and Redis, and stops private instances of them (never the shared ones). It is not');
  out.push('part of `npm test`. This file is written by the suite; do not edit it by hand.');
  out.push('');
  out.push('```bash');
  out.push('npm run test:reliability                                   # the whole suite, then this file');
  out.push('npm run test:reliability -- test/reliability/mcp-fuzz      # one test (its row here is updated)');
  out.push('```');
  out.push('');
  out.push(
    suite
      ? `Whole suite: ${(suite.seconds / 60).toFixed(1)} min (${suite.seconds} s wall clock, build included), last run ${suite.finishedAt.slice(0, 16).replace('T', ' ')} UTC.`
      : 'Whole suite: not run yet.',
  );
  if (!complete)
    out.push(
      `This file was last updated by a partial run (${[...freshKeys].join(', ')}) at ${new Date(run.finishedAt).toISOString().slice(0, 16).replace('T', ' ')} UTC; other rows show the date they ran.`,
    );
  out.push('');
  out.push(
    `Machine: ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, ${(totalmem() / 2 ** 30).toFixed(0)} GB RAM; Node ${process.version}; ` +
      `${versionOf('psql', ['--version'])}; ${versionOf('redis-server', ['--version']).replace(/ sha=.*/, '')}. ` +
      'PostgreSQL, Redis, the service, the receiver and the load generator share the machine, so the rates below are ' +
      'those of a busy 2-core machine, not benchmarks (see docs/BENCHMARKS.md for those).',
  );
  out.push('');
  out.push('## Results');
  out.push('');
  out.push('| Test | Load held | Faults survived | Bad inputs tried | Events lost | Duplicates | Result | Time |');
  out.push('|---|---|---|---|---|---|---|---|');
  for (const r of rows) {
    const stale = freshKeys.has(r.key) ? '' : ` (${r.ranAt.slice(0, 10)})`;
    out.push(
      `| [${cell(r.title)}](#${anchor(r.title)}) | ${cell(r.load)} | ${cell(r.faults)} | ${cell(r.badInputs)} | ${cell(r.lost === null ? 'n/a' : r.lost)} | ` +
        `${cell(r.duplicates)} | ${status(r)}${stale} | ${(r.durationMs / 1000).toFixed(0)} s |`,
    );
  }
  out.push('');
  out.push('"Events lost" counts events whose change was committed (the ingest call answered 2xx) and that');
  out.push('never reached the receiver. "Duplicates" counts event ids the receiver got more than once:');
  out.push('delivery is at least once (docs/webhooks.md, "Delivery guarantee"), so a worker killed between');
  out.push('sending and recording makes some; receivers deduplicate on `id`.');
  for (const r of rows) {
    out.push('');
    out.push(`## ${r.title}`);
    out.push('');
    out.push(
      `${r.skipped ? `Skipped (${r.skipped})` : r.passed ? 'Passed' : '**Failed**'} on ${r.ranAt.slice(0, 19).replace('T', ' ')} UTC in ${(r.durationMs / 1000).toFixed(1)} s.`,
    );
    out.push('');
    out.push('| Figure | Value |');
    out.push('|---|---|');
    for (const [name, value] of r.figures) out.push(`| ${cell(name)} | ${cell(value)} |`);
    if (r.notes?.length) {
      out.push('');
      for (const note of r.notes) out.push(`- ${note}`);
    }
  }
  out.push('');
  out.push('## Running it');
  out.push('');
  out.push('- Needs PostgreSQL and Redis as for `npm test` (scripts/ensure-services.sh runs first), plus `redis-server` and the');
  out.push('  PostgreSQL server binaries (`initdb`, `pg_ctl`; found under /usr/lib/postgresql/*/bin or with `PG_BIN_DIR`) for the');
  out.push('  private instances it stops. As root, the private PostgreSQL runs as the `postgres` user (`runuser`). Without the');
  out.push('  binaries the PostgreSQL test is reported as skipped.');
  out.push('- Each test makes its own database (`mss_rel_<run>_<test>`) on the shared PostgreSQL and drops it; the shared');
  out.push('  PostgreSQL and Redis are never stopped. `KEEP_TEST_DATABASE=1` keeps the databases.');
  out.push('- The service is compiled once per run into node_modules/.cache/mss-reliability/build (not dist/, which `npm run build`');
  out.push('  may be rewriting); each process logs to /tmp/mss-reliability-logs/run-<id>/.');
  out.push('- Knobs: `RELIABILITY_BURST_EVENTS` (20000), `RELIABILITY_KILLS` (3), `RELIABILITY_REDIS_OUTAGE_MS` (30000),');
  out.push('  `RELIABILITY_PG_DOWN_MS` (15000), `RELIABILITY_REPLICA_EVENTS` (1500), `RELIABILITY_FUZZ_RUNS` (10000),');
  out.push('  `RELIABILITY_FUZZ_SEED` (replays a fuzz run), `RELIABILITY_ABUSE_MS` (20000), `RELIABILITY_ABUSE_BIG` (90), `RELIABILITY_ABUSE_BOMBS` (100),');
  out.push("  `RELIABILITY_ENV` (JSON of service variables that override the tests' own).");
  out.push('');
  out.push(`${DATA_MARK} ${JSON.stringify({ results: all, suite }).replace(/-->/g, '--\\u003e')} -->`);
  out.push('');
  writeFileSync(DOC, out.join('\n'));
  return { written: true, results: fresh.length };
}

function anchor(title: string): string {
  return title
    .toLowerCase()
    .replace(/[^a-z0-9 -]/g, '')
    .trim()
    .replace(/ /g, '-');
}
