import { DataSource, EntityManager } from 'typeorm';
import { PLANNED_PER_CALL } from './preparing-client';

/**
 * The one way this code base passes parameters to SQL: `:name` placeholders with an object of
 * values, as TypeORM's query builders take them. The driver numbers them ($1, $2, ...), so nobody
 * counts parameters by hand, and a statement's text stays the same from call to call, which is
 * what lets PreparingClient prepare it once per connection (docs/decisions.md, "SQL").
 */

/** A SQL condition with its `:named` parameters: for a query builder's where(), or for queryNamed(). */
export interface SqlCondition {
  sql: string;
  parameters: Record<string, unknown>;
}

/** Runs SQL written with `:named` parameters. */
export function queryNamed<T = unknown>(manager: EntityManager, sql: string, parameters: Record<string, unknown> = {}): Promise<T> {
  const [text, values] = manager.connection.driver.escapeQueryWithParameters(sql, parameters);
  return manager.query(text, values);
}

/**
 * `column` equal to one of `values`, as the `:name` parameter. One value is compared by
 * equality, not `= ANY` of a one-element array: PostgreSQL's generic plan for the array form
 * measured half the inbound SMS/s of one thread (docs/PERFORMANCE.md, change 16), and batched
 * lookups are most often of one value when traffic is light. Two statement texts, each prepared once.
 */
export function inValues(column: string, name: string, values: string[], type: 'uuid' | 'text'): SqlCondition {
  return values.length === 1
    ? { sql: `${column} = :${name}`, parameters: { [name]: values[0] } }
    : { sql: `${column} = ANY (:${name}::${type}[])`, parameters: { [name]: values } };
}

/**
 * SQL: a one-row FROM item whose reading makes the statement's transaction commit without
 * waiting for its WAL to reach the disk (`set_config('synchronous_commit', 'off', true)`: for
 * this transaction only; a single statement's implicit one, too). For statements whose loss in
 * a PostgreSQL crash (the last few hundred milliseconds of commits) only repeats work that is
 * safe to repeat. Read it where the statement's writes are decided (a statement that reads no
 * row of it writes nothing, and has nothing to commit).
 */
export const COMMIT_ASYNC = `(SELECT set_config('synchronous_commit', 'off', true)) AS commit_async`;

/**
 * `sql` planned on every call for the values it is given, not prepared once per connection.
 * For batch statements that find rows by key in a table that grows: from a prepared statement's
 * sixth call PostgreSQL may settle on a generic plan and keep it for the connection's life, and
 * one made while the table was small scans a whole partial index or table on every call once
 * it is not (the delivery claim scanned every waiting delivery: docs/PERFORMANCE.md, change 18).
 * Planning each call costs a parse and a plan, so this is for statements where the plan matters.
 */
export function plannedPerCall(sql: string): string {
  return `${PLANNED_PER_CALL}\n${sql}`;
}

/**
 * Runs `read` in a transaction planned without bitmap or sequential scans (`SET LOCAL
 * enable_bitmapscan = off`, `enable_seqscan = off`), for statements that take a key's newest rows
 * from an index in order (`ORDER BY … LIMIT`):
 * - where the key is a value PostgreSQL cannot see when it plans (a lateral's column: each of the
 *   caller's lines, each agent; or a prepared statement's parameter), it estimates the key's rows
 *   from the column's distinct values across every org, a handful, and reading them all through a
 *   bitmap and sorting them looks as cheap as reading the page from the index; for a label on a
 *   fifth of a large org's threads, or an agent with thousands of turns, it is thousands of rows
 *   instead of 25.
 * - where a filter's estimate is far below the page (an endpoint's failed deliveries, estimated
 *   from the whole table's failure rate times the endpoint's share, then the filters on top), no
 *   LIMIT shortens the index scan's cost, and a whole-table scan and sort of a table the endpoint
 *   fills looks cheaper than fetching the estimated rows from the index; it reads every delivery
 *   of every endpoint to answer none.
 * test/mcp/read-plans.e2e-spec.ts, with other orgs (and their failed deliveries) in the database,
 * found both. The settings only cost a path when an index answers the statement.
 *
 * `genericPlan` also makes a prepared statement use its generic plan from its first call
 * (`plan_cache_mode = force_generic_plan`), for a statement written so that its generic plan
 * reads the right index and a plan for the values may not: the values let the planner prove a
 * partial index of every endpoint usable (an endpoint's failed deliveries through the delivery
 * log's index of finished deliveries by time, which walks every endpoint's deliveries to find a
 * page of one endpoint's, 26,198 rows in the plan test for none found).
 */
export function inIndexOrder<T>(dataSource: DataSource, read: (manager: EntityManager) => Promise<T>, options: { genericPlan?: boolean } = {}): Promise<T> {
  return dataSource.transaction(async (manager) => {
    await manager.query(
      `SET LOCAL enable_bitmapscan = off; SET LOCAL enable_seqscan = off${options.genericPlan ? '; SET LOCAL plan_cache_mode = force_generic_plan' : ''}`,
    );
    return read(manager);
  });
}

/**
 * Runs `work` inside the transaction `tx` and undoes whatever it wrote (a savepoint rolled back
 * once it ends, whether it returned or threw): for a call that must be judged as it would run,
 * without its effects. Its error, if any, is thrown on; the transaction goes on either way.
 */
export async function rolledBack<T>(tx: EntityManager, work: () => Promise<T>): Promise<T> {
  await tx.query('SAVEPOINT rolled_back_work');
  try {
    return await work();
  } finally {
    await tx.query('ROLLBACK TO SAVEPOINT rolled_back_work');
  }
}
