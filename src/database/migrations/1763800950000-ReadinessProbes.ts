import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 46: /ready asks whether PostgreSQL can be written by writing (src/health/database-probe.ts):
 * an INSERT here, rolled back at once, so the table stays empty. A table of its own keeps the
 * probe from locking or touching a row the service uses.
 */
export class ReadinessProbes1763800950000 implements MigrationInterface {
  name = 'ReadinessProbes1763800950000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE readiness_probes (probe_id text PRIMARY KEY, probed_at timestamptz NOT NULL)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE readiness_probes`);
  }
}
