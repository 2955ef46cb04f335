#!/usr/bin/env node
/*
 * `npm test`: runs every step, even after one fails, then prints what each gave and every failed
 * test, and exits 1 if any step failed. A failure in the type-check must not hide whether the
 * browser tests pass. The steps are the package.json scripts of the same names:
 *
 *   typecheck, lint, test:unit, test:e2e, test:cluster, test:browser
 *
 * test:cluster runs the delivery, rate-limit, live-stream and queue suites and test/cluster on a
 * Redis Cluster of the run's own (test/cluster/jest.project.js, docs/redis-cluster.md): a step of
 * its own, so a cluster failure is named as such and its six redis-server processes stay out of
 * the e2e shards.
 *
 * Concurrency (TOGETHER and SHARDS below): the two end-to-end shards run at the same time, and so do
 * test:cluster and test:browser; their lines are prefixed ("[e2e 1/2] ", "[cluster] ") so the log
 * stays readable, and the summary and the failed tests come from each Jest process's JSON report as
 * before. Nothing they share collides: each Jest process has its own database, Bull prefix and
 * SECRETS_KEY (test/support/global-setup.ts), servers on free ports (ports 0 for its apps, SMTP and
 * receivers; ports checked free for Dovecot, private redis-servers and the cluster's nodes),
 * temporary directories of its own, and
 * PostgreSQL's cluster-wide views (pg_stat_activity, pg_locks) are read for its own database only.
 *
 * Usage: node scripts/test-all.js [step ...]   (e.g. `npm test -- lint test:unit`: only those)
 * Ctrl-C stops the whole run. PostgreSQL and Redis are made sure of before (`pretest`).
 */
'use strict';
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const STEPS = ['typecheck', 'lint', 'test:unit', 'test:e2e', 'test:cluster', 'test:browser'];
const JEST_STEPS = new Set(['test:unit', 'test:e2e', 'test:cluster', 'test:browser']);

const chosen = process.argv.slice(2);
const unknown = chosen.filter((step) => !STEPS.includes(step));
if (unknown.length) {
  process.stderr.write(`test-all: unknown step ${unknown.join(', ')}; the steps are ${STEPS.join(', ')}\n`);
  process.exit(2);
}
const steps = chosen.length ? STEPS.filter((step) => chosen.includes(step)) : STEPS;
const reports = fs.mkdtempSync(path.join(os.tmpdir(), 'test-all-'));

/** "1m 05s" */
function duration(ms) {
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
}

/** The failed tests of a Jest JSON report: "file: test name" lines (a file that failed to run: its message). */
function failedTests(reportFile) {
  if (!fs.existsSync(reportFile)) return [];
  const report = JSON.parse(fs.readFileSync(reportFile, 'utf8'));
  const lines = [];
  for (const file of report.testResults || []) {
    if (file.status !== 'failed') continue;
    const where = path.relative(process.cwd(), file.name);
    const failed = (file.assertionResults || []).filter((a) => a.status === 'failed');
    if (!failed.length) lines.push(`${where}: ${(file.message || 'failed to run').split('\n').find((l) => l.trim()) || 'failed to run'}`);
    for (const assertion of failed) lines.push(`${where}: ${assertion.fullName}`);
  }
  return lines;
}

/**
 * What runs at the same time. The two end-to-end shards run concurrently: each is one Jest process
 * that mostly waits on PostgreSQL, Redis and its app (one file at a time, --runInBand), so on 2 cores
 * two of them take little more than one; each has its own database, Bull prefix and ports (the
 * global setup, ports 0), nothing of the other's. The cluster and browser steps run side by side
 * for the same reason. The others use every core (tsc, eslint, the unit tests' workers).
 */
const TOGETHER = [['test:cluster', 'test:browser']];
// The end-to-end files run in two Jest processes, half each (--shard): one process for all of them
// ran out of its heap near the end (each file leaves some of its app reachable). E2E_SHARDS=<n>
// runs n of them at once instead (a machine with more cores).
const E2E_SHARDS = Number(process.env.E2E_SHARDS ?? 2);
if (!Number.isInteger(E2E_SHARDS) || E2E_SHARDS < 1) {
  process.stderr.write(`test-all: E2E_SHARDS must be a whole number from 1, not ${process.env.E2E_SHARDS}\n`);
  process.exit(2);
}
const SHARDS = { 'test:e2e': E2E_SHARDS > 1 ? Array.from({ length: E2E_SHARDS }, (_, i) => `${i + 1}/${E2E_SHARDS}`) : [null] };

/** Batches of steps in order: steps of one TOGETHER entry that were both chosen form one batch. */
function batches(list) {
  const out = [];
  for (const step of list) {
    const group = TOGETHER.find((g) => g.includes(step));
    const open = group && out.find((b) => b.group === group);
    if (open) open.steps.push(step);
    else out.push({ group, steps: [step] });
  }
  return out.map((b) => b.steps);
}

/** The npm processes under way. */
const running = new Set();

/**
 * Runs `npm run <step> [-- args]`. Alone, its output goes straight to ours; run with others
 * (`label` given), each line of it is prefixed with the label, so the log tells them apart.
 */
function runNpm(step, args, label) {
  return new Promise((resolve) => {
    const child = spawn('npm', ['run', step, ...args], { stdio: label ? ['ignore', 'pipe', 'pipe'] : 'inherit' });
    running.add(child);
    if (label) {
      for (const [from, to] of [
        [child.stdout, process.stdout],
        [child.stderr, process.stderr],
      ]) {
        let rest = '';
        from.setEncoding('utf8');
        from.on('data', (chunk) => {
          const lines = (rest + chunk).split('\n');
          rest = lines.pop();
          if (lines.length) to.write(lines.map((l) => `[${label}] ${l}\n`).join(''));
        });
        from.on('end', () => rest && to.write(`[${label}] ${rest}\n`));
      }
    }
    child.on('error', (error) => resolve({ status: null, error }));
    child.on('close', (status, signal) => {
      running.delete(child);
      resolve({ status, signal });
    });
  });
}

/** Runs one step (its shards at once) and gives its result, with `label`s when others run alongside. */
async function runStep(step, alongside) {
  const report = path.join(reports, `${step.replace(':', '-')}.json`);
  const shards = SHARDS[step] ?? [null];
  const begin = Date.now();
  const reportsOf = [];
  const runs = await Promise.all(
    shards.map((shard) => {
      const out = shard ? report.replace(/\.json$/, `-${shard.replace('/', 'of')}.json`) : report;
      reportsOf.push(out);
      const extra = JEST_STEPS.has(step) ? ['--', '--json', `--outputFile=${out}`, ...(shard ? [`--shard=${shard}`] : [])] : [];
      const label = shards.length > 1 || alongside ? `${step.replace(/^test:/, '')}${shard ? ` ${shard}` : ''}` : null;
      return runNpm(step, extra, label);
    }),
  );
  const interrupted = runs.some((r) => r.signal === 'SIGINT' || r.status === 130);
  const failed = runs.find((r) => r.status !== 0 || r.error);
  const passed = !failed;
  return { step, passed, interrupted, ms: Date.now() - begin, failures: passed ? [] : reportsOf.flatMap((r) => failedTests(r)), error: failed?.error };
}

async function main() {
  // Ctrl-C reaches the npm and Jest processes too (one process group): they stop, and the step is
  // reported as interrupted below instead of this process dying before them.
  // A SIGINT sent to this process alone is passed on to the npm processes (npm does not always
  // pass it on to Jest: then stop Jest by its pid, or Ctrl-C the whole group).
  process.on('SIGINT', () => {
    for (const child of running) child.kill('SIGINT');
  });
  const results = [];
  const started = Date.now();
  for (const batch of batches(steps)) {
    process.stdout.write(
      `\n== npm run ${batch.join(' & npm run ')}${SHARDS[batch[0]]?.length > 1 && batch.length === 1 ? ` (${SHARDS[batch[0]].length} shards at once)` : ''}\n`,
    );
    const done = await Promise.all(batch.map((step) => runStep(step, batch.length > 1)));
    const stopped = done.find((r) => r.interrupted);
    if (stopped) {
      process.stderr.write(`\ntest-all: ${stopped.step} interrupted; the run stops\n`);
      process.exit(130);
    }
    results.push(...done);
  }
  return { results, started };
}

main().then(({ results, started }) => {
  fs.rmSync(reports, { recursive: true, force: true });

  const width = Math.max(...steps.map((s) => s.length), 'step'.length);
  const out = ['', '== npm test: summary', `${'step'.padEnd(width)}  result  duration`];
  for (const r of results) out.push(`${r.step.padEnd(width)}  ${(r.passed ? 'passed' : 'FAILED').padEnd(6)}  ${duration(r.ms)}`);
  out.push(`${'total'.padEnd(width)}  ${results.every((r) => r.passed) ? 'passed' : 'FAILED'}  ${duration(Date.now() - started)}`);
  for (const r of results.filter((x) => !x.passed)) {
    out.push('', `${r.step} failed${r.error ? ` (${r.error.message})` : ''}${r.failures.length ? ':' : ' (its output is above)'}`);
    for (const line of r.failures) out.push(`  ${line}`);
  }
  process.stdout.write(`${out.join('\n')}\n`);
  process.exit(results.every((r) => r.passed) ? 0 : 1);
});
