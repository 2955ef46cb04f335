import { MigrationInterface, QueryRunner } from 'typeorm';

/** list_agent_turns reads an org's turns newest first, on the caller's lines (agents by line). */
export class AgentTurnIndexes1763800450000 implements MigrationInterface {
  name = 'AgentTurnIndexes1763800450000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX agent_turns_org_recent_idx ON agent_turns (org_id, created_at DESC, id DESC)`);
    await q.query(`CREATE INDEX agent_turns_agent_idx ON agent_turns (agent_id)`);
    await q.query(`CREATE INDEX agents_line_idx ON agents (line_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS agents_line_idx`);
    await q.query(`DROP INDEX IF EXISTS agent_turns_agent_idx`);
    await q.query(`DROP INDEX IF EXISTS agent_turns_org_recent_idx`);
  }
}
