import { Inject, Injectable, Logger, Module, OnApplicationShutdown } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DatabaseError, Pool, PoolClient } from 'pg';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { PreparingClient } from './preparing-client';

/**
 * The session settings of ProbePool's connections. Each statement is prepared and planned once,
 * for any values (`plan_cache_mode = force_generic_plan`), with the paths that lose on a large
 * table ruled out: no sequential or bitmap scan, no hash or merge join. So a plan keeps probing
 * the primary key when far more rows wait than the statistics say; a plan made while a partition
 * was analyzed with a handful of rows reads all of it until autovacuum analyzes it again, which
 * remakes the plan (test/database/database-prepared.e2e-spec.ts). Commits do not wait for the WAL to reach the disk: only statements whose loss in a
 * PostgreSQL crash repeats safe work run here (DeliveryAttemptsRepository).
 */
export const PROBE_SETTINGS: Readonly<Record<string, string>> = {
  jit: 'off',
  plan_cache_mode: 'force_generic_plan',
  enable_seqscan: 'off',
  enable_bitmapscan: 'off',
  enable_hashjoin: 'off',
  enable_mergejoin: 'off',
  synchronous_commit: 'off',
  // A statement stuck on a lock fails instead of holding its batch, and shutdown, for ever; its attempts are swept and sent again.
  statement_timeout: '1min',
};

/**
 * SQL: PROBE_SETTINGS made for the session, run on each connection before its first statement.
 * Not startup options: pg lets `options` in DATABASE_URL (or PGOPTIONS) replace those, and a
 * provider's URL may carry its own.
 */
export const PROBE_SET = Object.entries(PROBE_SETTINGS)
  .map(([name, value]) => `SET ${name} = '${value}'`)
  .join('; ');

/**
 * Connections of a process's probe pool: two batchers (claims, successes) with at most two batches
 * in flight each (MicroBatcher), each batch one statement per day it holds (two across midnight).
 */
export const PROBE_POOL_SIZE = 8;

/**
 * A small pool of its own for batch statements that find rows by key in a table that grows (the
 * delivery claim of first attempts, the record of successes): each runs prepared, planned once per
 * connection under PROBE_SETTINGS, instead of planned on every call (`plannedPerCall`), which cost
 * a quarter of PostgreSQL's CPU per delivery (docs/PERFORMANCE.md, change 38). Not for statements
 * that need a transaction of the caller's, or whose best plan is a scan. Connections open when
 * first used and close after 10 s idle, so a process that never runs such a statement opens none.
 */
@Injectable()
export class ProbePool implements OnApplicationShutdown {
  private readonly logger = new Logger(ProbePool.name);
  private readonly pool: Pool;
  /** Connections whose session PROBE_SET has been run on. */
  private readonly configured = new WeakSet<PoolClient>();

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
      // A connection lost without a word (a network partition) is noticed instead of waited on for ever.
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      // A connection keeps its statements' plans for its life: renewed at least hourly.
      maxLifetimeSeconds: 3600,
    });
    // An idle connection that fails (PostgreSQL restarted, say) is dropped by the pool; the next query opens another.
    this.pool.on('error', (error) => this.logger.warn(`an idle probe connection failed: ${error.message}`));
  }

  /**
   * Runs `sql`, written with `:named` parameters (sql.ts), on one of the pool's connections and
   * answers its rows. A connection whose query failed other than with an error of the statement's
   * own (its socket broke, or PostgreSQL ended the session) is closed rather than reused.
   */
  async query<T>(sql: string, parameters: Record<string, unknown>): Promise<T[]> {
    const [text, values] = this.dataSource.driver.escapeQueryWithParameters(sql, parameters);
    const client = await this.pool.connect();
    // While a connection is lent, the pool does not listen to it: a socket that breaks mid-query
    // emits 'error' on the client (besides failing the query), which unheard would end the process.
    let failure: Error | undefined;
    const onError = (error: Error) => (failure ??= error);
    client.on('error', onError);
    try {
      if (!this.configured.has(client)) {
        await client.query(PROBE_SET);
        this.configured.add(client);
      }
      // Two arguments, no callback: PreparingClient prepares the statement (pool.query would pass a callback, and run it unnamed).
      const result = await client.query(text, values);
      return result.rows as T[];
    } catch (error) {
      // FATAL: PostgreSQL ends the session (shutting down, the backend terminated); its socket closes on a later tick.
      if (!(error instanceof DatabaseError) || error.severity === 'FATAL' || error.severity === 'PANIC') failure ??= error as Error;
      throw error;
    } finally {
      client.off('error', onError);
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
