import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Job, Queue } from 'bull';
import { PeriodicTask } from '../common/periodic-task';
import { AppConfig, ProcessRole } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { startProcessing } from './start-processing';

/** The roles that run background work: a worker, and a process that is both API and worker. */
export const WORKER_ROLES: readonly ProcessRole[] = ['worker', 'all'];

/** One piece of background work, as the registry lists it (docs/operations.md, "Background work"). */
export interface BackgroundWorkEntry {
  /** Unique; logged at start and listed in docs/operations.md. */
  name: string;
  /** The PROCESS_ROLEs that run it. */
  roles: readonly ProcessRole[];
  /** How often it runs, or how many jobs at once: "every 15 s", "100 jobs at once". */
  cadence: string;
  /** The setting that changes the cadence, if one does. */
  setting?: string;
  /** False when configuration turns it off: it is logged as off and not started. */
  enabled?: boolean;
  start(): void;
  /** Resolves once it has stopped. */
  stop?(): Promise<void> | void;
}

interface Common {
  name: string;
  roles: readonly ProcessRole[];
  setting?: string;
  enabled?: boolean;
  /** Where its failures are logged (the feature's logger). */
  logger: Logger;
}

/**
 * The one list of what runs in the background: features register their work here when their
 * module initialises, and BackgroundWorkRunner starts what the process role runs. A feature
 * neither starts a timer nor a queue processor itself.
 */
@Injectable()
export class BackgroundWork {
  private readonly registered: BackgroundWorkEntry[] = [];

  add(entry: BackgroundWorkEntry): void {
    if (this.registered.some((other) => other.name === entry.name)) throw new Error(`background work "${entry.name}" is registered twice`);
    this.registered.push(entry);
  }

  /** `run` every `everyMs` (a PeriodicTask: never twice at once, a failure logged and tried again); `atStart` runs it once at start too. */
  every(spec: Common & { everyMs: number; atStart?: boolean; run: () => Promise<unknown> }): void {
    const task = new PeriodicTask(spec.name, spec.logger, spec.run);
    this.add({
      ...spec,
      cadence: `${spec.atStart ? 'at start, then ' : ''}every ${duration(spec.everyMs)}`,
      start: () => {
        task.start(spec.everyMs);
        if (spec.atStart) void task.runOnce();
      },
      stop: () => task.stop(),
    });
  }

  /**
   * The jobs of `queue`, `concurrency` at once. Nothing to stop here: QueuesShutdown stops every
   * queue's processing together before the shutdown hooks, and the jobs under way finish.
   */
  queue<T>(spec: Common & { queue: Queue<T>; concurrency: number; run: (job: Job<T>) => Promise<unknown> }): void {
    this.add({
      ...spec,
      cadence: `${spec.concurrency} jobs at once`,
      start: () => startProcessing(spec.queue, spec.concurrency, spec.run, spec.logger),
    });
  }

  entries(): readonly BackgroundWorkEntry[] {
    return this.registered;
  }
}

/**
 * Starts the background work of the process role once every module has initialised (and
 * registered its work), logging one line per entry, and stops it at shutdown. It is provided by
 * the root module: Nest runs the root's shutdown hooks first, so the work stops before the
 * features' modules close what it uses (queues, the database, the mailer).
 */
@Injectable()
export class BackgroundWorkRunner implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(BackgroundWork.name);
  private started: BackgroundWorkEntry[] = [];

  constructor(
    private readonly work: BackgroundWork,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  onApplicationBootstrap(): void {
    for (const entry of this.work.entries()) {
      if (!entry.roles.includes(this.config.processRole)) continue;
      if (entry.enabled !== false) {
        entry.start();
        this.started.push(entry);
      }
      this.logger.log(logLine(entry));
    }
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all(this.started.splice(0).map((entry) => entry.stop?.()));
  }
}

/** `background work: <name> — <cadence> (<setting>) — roles <roles>`, or `— off (<setting>) —` when configured off. */
export function logLine(entry: BackgroundWorkEntry): string {
  const setting = entry.setting ? ` (${entry.setting})` : '';
  const cadence = entry.enabled === false ? `off${setting}` : `${entry.cadence}${setting}`;
  return `background work: ${entry.name} — ${cadence} — roles ${entry.roles.join(', ')}`;
}

/** 500 ms, 30 s, 10 min, 1 h: the largest unit that divides the duration. */
export function duration(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  if (ms % 1000 === 0) return `${ms / 1000} s`;
  return `${ms} ms`;
}
