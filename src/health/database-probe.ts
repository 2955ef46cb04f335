import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import { Pool } from 'pg';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';

/** How long /ready waits for PostgreSQL (connecting, then answering). */
export const PROBE_TIMEOUT_MS = 2000;

/**
 * PostgreSQL as /ready sees it: one connection of its own, outside the app's pool of 20. A probe
 * then says whether the database answers, not whether the pool has a free connection: a pool kept
 * busy by traffic is load, not a reason to take the process out of the load balancer (which would
 * only push the same load onto the other replicas).
 */
@Injectable()
export class DatabaseProbe implements OnModuleDestroy {
  private readonly pool: Pool;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.pool = new Pool({
      connectionString: config.databaseUrl,
      max: 1,
      idleTimeoutMillis: 0,
      connectionTimeoutMillis: PROBE_TIMEOUT_MS,
      query_timeout: PROBE_TIMEOUT_MS,
      application_name: 'mss-ready-probe',
    });
    // A dropped connection is replaced at the next probe; the probe itself reports the failure.
    this.pool.on('error', () => undefined);
  }

  async ping(): Promise<void> {
    await this.pool.query('SELECT 1');
  }

  async onModuleDestroy(): Promise<void> {
    await this.pool.end();
  }
}
