import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { ServiceMetrics } from '../ops/metrics/service-metrics';
import { DatabaseProbe, PROBE_TIMEOUT_MS } from './database-probe';
import { QueueProbe } from './queue-probe';
import { ReadinessChecks } from './readiness-checks';

/** A scrape within this long of the last run reads that run's gauges instead of running the checks again. */
const SCRAPE_REUSE_MS = 5_000;

export type CheckState = { status: 'up' } | { status: 'down'; message: string };

/** The body of /ready, in @nestjs/terminus's shape (what /health answers), with one line saying why when not ready. */
export interface ReadinessReport {
  status: 'ok' | 'error';
  /** Only when not ready: every failed check and why, in one line. */
  message?: string;
  info: Record<string, CheckState>;
  error: Record<string, CheckState>;
  details: Record<string, CheckState>;
}

/**
 * Runs the readiness checks of this process's role, all at once, each bounded by PROBE_TIMEOUT_MS
 * (docs/operations.md, "Readiness"): `queue` (Redis through the Bull queues' own clients),
 * `postgres` (a new session can write), and those features register (the outbox relay's, on the
 * roles that relay). Callers that arrive while a run is under way share its result, so a burst of
 * probes costs one run. Each run sets the ready_check_up gauges; a scrape of /metrics runs it too
 * unless a run ended less than SCRAPE_REUSE_MS before.
 */
@Injectable()
export class Readiness implements OnModuleInit {
  private running?: Promise<ReadinessReport>;
  private lastRunAt = 0;

  constructor(
    private readonly database: DatabaseProbe,
    private readonly queue: QueueProbe,
    private readonly checks: ReadinessChecks,
    private readonly metrics: ServiceMetrics,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    // Prometheus scrapes every 15 s or so; a client polling /metrics hard does not open a PostgreSQL session each time.
    this.metrics.addCollector('readiness', async () => {
      if (Date.now() - this.lastRunAt >= SCRAPE_REUSE_MS) await this.evaluate();
    });
  }

  evaluate(): Promise<ReadinessReport> {
    this.running ??= this.run().finally(() => {
      this.running = undefined;
      this.lastRunAt = Date.now();
    });
    return this.running;
  }

  private async run(): Promise<ReadinessReport> {
    const checks: Array<[string, (signal: AbortSignal) => Promise<void>]> = [
      ['queue', () => this.queue.check()],
      ['postgres', (signal) => this.database.checkWritable(signal)],
      ...this.checks.forRole(this.config.processRole).map((check): [string, () => Promise<void>] => [check.name, () => check.run(this.database.database)]),
    ];
    const results = await Promise.all(checks.map(async ([name, check]): Promise<[string, CheckState]> => [name, await bounded(check)]));
    const report: ReadinessReport = { status: 'ok', info: {}, error: {}, details: {} };
    for (const [name, state] of results) {
      this.metrics.readinessChecked(name, state.status === 'up');
      report.details[name] = state;
      (state.status === 'up' ? report.info : report.error)[name] = state;
    }
    const failed = Object.entries(report.error);
    if (failed.length) {
      report.status = 'error';
      report.message = `not ready: ${failed.map(([name, state]) => `${name}: ${(state as { message: string }).message}`).join('; ')}`;
    }
    return report;
  }
}

/** Runs one check within PROBE_TIMEOUT_MS; a check still running then is aborted and counts as down. */
async function bounded(check: (signal: AbortSignal) => Promise<void>): Promise<CheckState> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort();
      reject(new Error(`no answer within ${PROBE_TIMEOUT_MS / 1000} s (the server hangs, or the network drops packets)`));
    }, PROBE_TIMEOUT_MS);
  });
  try {
    await Promise.race([check(controller.signal), timeout]);
    return { status: 'up' };
  } catch (error) {
    return { status: 'down', message: error instanceof Error ? error.message : String(error) };
  } finally {
    clearTimeout(timer);
  }
}
