import { EntityManager } from 'typeorm';

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
