import { Injectable } from '@nestjs/common';
import { ProcessRole } from '../config/app-config';

/** A read on /ready's own PostgreSQL connection (not the app's pool): a busy pool does not fail a check. */
export interface ProbeDatabase {
  query<T>(sql: string, parameters?: unknown[]): Promise<T[]>;
}

/** One check of /ready a feature registers (the outbox relay's): it throws an Error whose message says, in an operator's words, why the process is not ready. */
export interface ReadinessCheck {
  /** The check's name in the body and in the metrics' `check` label. */
  name: string;
  /** The PROCESS_ROLEs it counts on. */
  roles: readonly ProcessRole[];
  run(database: ProbeDatabase): Promise<void>;
}

/** The checks features add to /ready, besides the queue's and PostgreSQL's own (docs/operations.md, "Readiness"). */
@Injectable()
export class ReadinessChecks {
  private readonly registered: ReadinessCheck[] = [];

  add(check: ReadinessCheck): void {
    if (this.registered.some((other) => other.name === check.name)) throw new Error(`readiness check "${check.name}" is registered twice`);
    this.registered.push(check);
  }

  forRole(role: ProcessRole): readonly ReadinessCheck[] {
    return this.registered.filter((check) => check.roles.includes(role));
  }
}
