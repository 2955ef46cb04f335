import { Inject, Injectable, Logger, Module, OnApplicationShutdown } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DatabaseError, Pool } from 'pg';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { PreparingClient } from './preparing-client';

/**
 * The session settings of ProbePool's connections, as libpq startup options. Each statement is
 * prepared and planned once, for any values (`plan_cache_mode = force_generic_plan`), with the
 * paths that lose on a large table ruled out: no sequential or bitmap scan, no hash or merge join.
 * So a plan made on a day's partition while it is empty or young still probes its primary key once
 * the day holds millions of rows. Commits do not wait for the WAL to reach the disk: only
 * statements whose loss in a PostgreSQL crash repeats safe work run here (DeliveryAttemptsRepository).
 */
export const PROBE_SETTINGS: Readonly<Record<string, string>> = {
  jit: 'off',
  plan_cache_mode: 'force_generic_plan',
  enable_seqscan: 'off',
  enable_bitmapscan: 'off',
  enable_hashjoin: 'off',
  enable_mergejoin: 'off',
  synchronous_commit: 'off',
};

/** PROBE_SETTINGS as a connection's `options` (`-c name=value …`). */
export const PROBE_OPTIONS = Object.entries(PROBE_SETTINGS)
  .map(([name, value]) => `-c ${name}=${value}`)
  .join(' ');

/** Connections of a process's probe pool: its statements are short, and the worker runs a few at a time. */
export const PROBE_POOL_SIZE = 4;

/**
 * A small pool of its own for batch statements that find rows by key in a table that grows (the
 * delivery claim of first attempts, the record of successes): each runs prepared, planned once per
 * connection under PROBE_SETTINGS, instead of planned on every call (`plannedPerCall`), which cost
 * PostgreSQL a fifth of its time per delivery (docs/PERFORMANCE.md, change 38). Not for statements
 * that need a transaction of the caller's, or whose best plan is a scan. Connections open when first
 * used, so a process that never runs such a statement opens none.
 */
@Injectable()
export class ProbePool implements OnApplicationShutdown {
  private readonly logger = new Logger(ProbePool.name);
  private readonly pool: Pool;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    @InjectDataSource() private readonly dataSource: DataSource,
  ) {
    this.pool = new Pool({
      connectionString: config.databaseUrl,
      Client: PreparingClient,
      max: PROBE_POOL_SIZE,
      // As pg_stat_activity names them.
      application_name: 'mss-probe-pool',
      connectionTimeoutMillis: 5000,
      // A connection keeps its statements' plans for its life: renewed hourly, so a plan is at most an hour older than the schema's statistics.
      maxLifetimeSeconds: 3600,
      options: PROBE_OPTIONS,
    });
    // An idle connection that fails (PostgreSQL restarted, say) is dropped by the pool; the next query opens another.
    this.pool.on('error', (error) => this.logger.warn(`an idle probe connection failed: ${error.message}`));
  }

  /**
   * Runs `sql`, written with `:named` parameters (sql.ts), on one of the pool's connections and
   * answers its rows. A connection whose query failed other than with PostgreSQL's own error (the
   * connection broke, say) is closed rather than reused.
   */
  async query<T>(sql: string, parameters: Record<string, unknown>): Promise<T[]> {
    const [text, values] = this.dataSource.driver.escapeQueryWithParameters(sql, parameters);
    const client = await this.pool.connect();
    let failure: Error | undefined;
    try {
      // Two arguments, no callback: PreparingClient prepares the statement (pool.query would pass a callback, and run it unnamed).
      const result = await client.query(text, values);
      return result.rows as T[];
    } catch (error) {
      if (!(error instanceof DatabaseError)) failure = error as Error;
      throw error;
    } finally {
      client.release(failure);
    }
  }

  /** After the processors' beforeApplicationShutdown: the statements they started have ended, and the pool waits for none. */
  async onApplicationShutdown(): Promise<void> {
    await this.pool.end();
  }
}

/** Provides ProbePool to the module that imports it (one pool per process: Nest keeps one instance of the module). */
@Module({ providers: [ProbePool], exports: [ProbePool] })
export class ProbePoolModule {}
