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
 * Usage: node scripts/test-all.js [step ...]   (e.g. `npm test -- lint test:unit`: only those)
 * Ctrl-C stops the whole run. PostgreSQL and Redis are made sure of before (`pretest`).
 */
'use strict';
const { spawnSync } = require('node:child_process');
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

const results = [];
const started = Date.now();
for (const step of steps) {
  process.stdout.write(`\n== npm run ${step}\n`);
  const report = path.join(reports, `${step.replace(':', '-')}.json`);
  // The end-to-end files run in two Jest processes, half each (--shard): one process for all of
  // them ran out of its heap near the end (each file leaves some of its app reachable).
  const shards = step === 'test:e2e' ? ['1/2', '2/2'] : [null];
  const begin = Date.now();
  let run = { status: 0 };
  const reportsOf = [];
  for (const shard of shards) {
    const out = shard ? report.replace(/\.json$/, `-${shard.replace('/', 'of')}.json`) : report;
    reportsOf.push(out);
    const extra = JEST_STEPS.has(step) ? ['--', '--json', `--outputFile=${out}`, ...(shard ? [`--shard=${shard}`] : [])] : [];
    const one = spawnSync('npm', ['run', step, ...extra], { stdio: 'inherit' });
    if (one.signal === 'SIGINT' || one.status === 130 || one.status !== 0 || one.error) run = one;
  }
  const ms = Date.now() - begin;
  if (run.signal === 'SIGINT' || run.status === 130) {
    process.stderr.write(`\ntest-all: ${step} interrupted; the run stops\n`);
    process.exit(130);
  }
  const passed = run.status === 0;
  results.push({ step, passed, ms, failures: passed ? [] : reportsOf.flatMap((r) => failedTests(r)), error: run.error });
}
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
