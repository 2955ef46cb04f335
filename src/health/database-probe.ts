import { randomBytes } from 'node:crypto';
import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import { Client, Pool } from 'pg';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { ProbeDatabase } from './readiness-checks';

/** How long one check of /ready may take (connecting included); the checks run at once, so /ready answers within about this. */
export const PROBE_TIMEOUT_MS = 2000;

/**
 * PostgreSQL as /ready sees it, outside the app's pool of 20: a pool kept busy by traffic is load,
 * not a reason to take the process out of the load balancer (which would only push the same load
 * onto the other replicas).
 *
 * - Reads (the checks features register, such as the outbox relay's) go through one connection of
 *   its own, kept open.
 * - Whether PostgreSQL can be written is asked on a new session each time, as the app's next pooled
 *   connection would get it: a setting made for new sessions (`ALTER DATABASE … SET
 *   default_transaction_read_only = on`, a role's setting) or a standby behind DATABASE_URL after a
 *   failover shows there, and not on a session opened before.
 */
@Injectable()
export class DatabaseProbe implements OnModuleDestroy {
  private readonly pool: Pool;
  /** This process's row in readiness_probes: the write is rolled back, so rows never stay. */
  private readonly probeId = randomBytes(8).toString('hex');

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
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

  /** Reads on the probe's own connection. */
  readonly database: ProbeDatabase = {
    query: async <T>(sql: string, parameters?: unknown[]) => (await this.pool.query(sql, parameters)).rows as T[],
  };

  /**
   * Resolves when a new session is read-write and a write succeeds (an INSERT rolled back); throws
   * an Error saying why not, in words for an operator. `signal` ends the session early (the check's timeout).
   */
  async checkWritable(signal: AbortSignal): Promise<void> {
    const client = new Client({
      connectionString: this.config.databaseUrl,
      connectionTimeoutMillis: PROBE_TIMEOUT_MS,
      query_timeout: PROBE_TIMEOUT_MS,
      application_name: 'mss-ready-probe',
    });
    client.on('error', () => undefined);
    const abort = () => void client.end().catch(() => undefined);
    signal.addEventListener('abort', abort, { once: true });
    try {
      try {
        await client.connect();
      } catch (error) {
        throw new Error(`PostgreSQL cannot be reached: ${describe(error)}`);
      }
      const [state] = (
        await client.query<{ read_only: string; in_recovery: boolean }>(
          `SELECT current_setting('transaction_read_only') AS read_only, pg_is_in_recovery() AS in_recovery`,
        )
      ).rows;
      if (state.in_recovery) {
        throw new Error('PostgreSQL cannot be written: the server is a standby in recovery (DATABASE_URL points at a replica, or a failover has not finished)');
      }
      if (state.read_only === 'on') {
        throw new Error(
          'PostgreSQL cannot be written: new sessions are read-only (transaction_read_only = on: default_transaction_read_only is set for the server, the database or the role)',
        );
      }
      // One statement list, one round trip; the id is this process's own hex, not input.
      try {
        await client.query(`BEGIN; INSERT INTO readiness_probes (probe_id, probed_at) VALUES ('${this.probeId}', now()); ROLLBACK`);
      } catch (error) {
        throw new Error(`PostgreSQL refused a write: ${describe(error)}`);
      }
    } finally {
      signal.removeEventListener('abort', abort);
      void client.end().catch(() => undefined);
    }
  }

  async onModuleDestroy(): Promise<void> {
    await this.pool.end();
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
