import { Client } from 'pg';
import { statementsOf } from './children';
import { BASE_DATABASE_URL, machineCpu, processCpuSeconds } from './infra';

export interface CpuReport {
  seconds: number;
  /** Cores used on average over the window, per component. */
  cores: Record<string, number>;
  /** The whole machine's busy share (all processes, including other people's), 0..1 of all cores. */
  machineBusy: number;
  /** Most frequent wait events of our database's active backends (sampled every 250 ms). */
  waits: Array<{ event: string; share: number }>;
  /** Average number of our database's backends that were active (running or waiting). */
  activeBackends: number;
  /** The statements most often seen waiting on a lock (first words of the query). */
  lockedQueries: Array<{ query: string; share: number }>;
  /** SQL statements the monitored service processes sent over the window (bench/lib/statements-preload.js; NaN if unknown). */
  statements: number;
}

/**
 * CPU per component over a window, from /proc (utime + stime): the service's processes, the
 * receiver, the harness itself, the PostgreSQL backends serving our database, and Redis
 * (shared with anything else using that server).
 */
export class Monitor {
  private client?: Client;
  private timer?: NodeJS.Timeout;
  private startedAt = 0;
  private startCpu: Record<string, number> = {};
  private startStatements = 0;
  private startMachine = { busy: 0, total: 0 };
  private startHarness = process.cpuUsage();
  private readonly backendFirst = new Map<number, number>();
  private readonly backendLast = new Map<number, number>();
  private waitCounts = new Map<string, number>();
  private lockCounts = new Map<string, number>();
  private samples = 0;
  private activeSum = 0;

  constructor(
    private readonly database: string,
    private readonly procs: Record<string, number>,
  ) {}

  async start(): Promise<void> {
    this.client = new Client({ connectionString: BASE_DATABASE_URL });
    await this.client.connect();
    this.startedAt = performance.now();
    this.startCpu = Object.fromEntries(Object.entries(this.procs).map(([name, pid]) => [name, processCpuSeconds(pid)]));
    this.startMachine = machineCpu();
    this.startStatements = this.statementsNow();
    this.startHarness = process.cpuUsage();
    await this.sample();
    this.timer = setInterval(() => void this.sample().catch(() => undefined), 250);
  }

  private sampling = false;

  private async sample(): Promise<void> {
    if (!this.client || this.sampling) return;
    this.sampling = true;
    try {
      const { rows } = await this.client.query<{ pid: number; state: string; wait: string | null; query: string }>(
        `SELECT pid, state, CASE WHEN wait_event IS NULL THEN NULL ELSE wait_event_type || ':' || wait_event END AS wait,
                left(regexp_replace(query, '\\s+', ' ', 'g'), 90) AS query
           FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`,
        [this.database],
      );
      this.samples += 1;
      for (const row of rows) {
        const cpu = processCpuSeconds(row.pid);
        if (Number.isFinite(cpu)) {
          if (!this.backendFirst.has(row.pid)) this.backendFirst.set(row.pid, cpu);
          this.backendLast.set(row.pid, cpu);
        }
        if (row.state === 'active') {
          this.activeSum += 1;
          const key = row.wait ?? 'CPU (no wait event)';
          this.waitCounts.set(key, (this.waitCounts.get(key) ?? 0) + 1);
          if (row.wait?.startsWith('Lock:')) this.lockCounts.set(row.query, (this.lockCounts.get(row.query) ?? 0) + 1);
        }
      }
    } finally {
      this.sampling = false;
    }
  }

  async stop(): Promise<CpuReport> {
    if (this.timer) clearInterval(this.timer);
    await this.sample().catch(() => undefined);
    const seconds = (performance.now() - this.startedAt) / 1000;
    const statements = this.statementsNow() - this.startStatements;
    const cores: Record<string, number> = {};
    for (const [name, pid] of Object.entries(this.procs)) {
      cores[name] = (processCpuSeconds(pid) - this.startCpu[name]) / seconds;
    }
    let pg = 0;
    for (const [pid, first] of this.backendFirst) pg += (this.backendLast.get(pid) ?? first) - first;
    cores.postgres = pg / seconds;
    const harness = process.cpuUsage(this.startHarness);
    cores.harness = (harness.user + harness.system) / 1e6 / seconds;
    const machine = machineCpu();
    const machineBusy = (machine.busy - this.startMachine.busy) / Math.max(1, machine.total - this.startMachine.total);
    const totalWaits = [...this.waitCounts.values()].reduce((a, b) => a + b, 0);
    const waits = [...this.waitCounts.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 5)
      .map(([event, count]) => ({ event, share: count / Math.max(1, totalWaits) }));
    const totalLocks = [...this.lockCounts.values()].reduce((a, b) => a + b, 0);
    const lockedQueries = [...this.lockCounts.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 3)
      .map(([query, count]) => ({ query, share: count / Math.max(1, totalLocks) }));
    await this.client?.end().catch(() => undefined);
    return { seconds, cores, machineBusy, waits, activeBackends: this.activeSum / Math.max(1, this.samples), lockedQueries, statements };
  }

  private statementsNow(): number {
    return [...new Set(Object.values(this.procs))].reduce((sum, pid) => sum + statementsOf(pid), 0);
  }
}

export function describeCpu(report: CpuReport): string {
  const parts = Object.entries(report.cores)
    .filter(([, v]) => Number.isFinite(v))
    .sort((a, b) => b[1] - a[1])
    .map(([name, v]) => `${name} ${v.toFixed(2)}`);
  return `cores used: ${parts.join(', ')}; machine busy ${(report.machineBusy * 100).toFixed(0)} %`;
}
