import { Client } from 'pg';
import { PLANNED_PER_CALL, PreparingClient } from '../../src/database/preparing-client';

/** A statement the service ran: its text and values, as the pool's client was handed them. */
export interface RanStatement {
  text: string;
  values: unknown[];
  /** The planner settings its transaction had made before it (`SET LOCAL …`), in order. */
  settings: string[];
}

/**
 * Records every statement the service's pool runs (PreparingClient is the pool's client class)
 * while `during` runs; the statements still run as they would, this only takes note of them.
 * Each statement carries the `SET LOCAL` settings in force for it: those its connection's
 * transaction made before it (a transaction's settings end with its COMMIT or ROLLBACK, and
 * concurrent transactions run on other connections).
 */
export async function statementsRunBy(during: () => Promise<unknown>): Promise<RanStatement[]> {
  const ran: RanStatement[] = [];
  const settingsBy = new Map<PreparingClient, string[]>();
  const original = PreparingClient.prototype.query;
  const spy = jest.spyOn(PreparingClient.prototype, 'query').mockImplementation(function (this: PreparingClient, ...args: unknown[]) {
    const [text, values] = args;
    if (typeof text === 'string') {
      const statement = text.trim();
      if (/^(BEGIN|START TRANSACTION|COMMIT|ROLLBACK)\b/i.test(statement)) settingsBy.delete(this);
      else if (/^SET\s+LOCAL\s+\w+/i.test(statement)) {
        // One query may make several settings (`SET LOCAL a = off; SET LOCAL b = off`): each is recorded on its own.
        const made = statement
          .split(';')
          .map((part) => part.trim())
          .filter(Boolean);
        settingsBy.set(this, [...(settingsBy.get(this) ?? []), ...made]);
      }
      ran.push({ text, values: Array.isArray(values) ? values : [], settings: [...(settingsBy.get(this) ?? [])] });
    }
    return original.apply(this, args);
  });
  try {
    await during();
  } finally {
    spy.mockRestore();
  }
  return ran;
}

/** Reads: statements that start with SELECT or WITH and write nothing (the key's last-use stamp, say, is not a read). */
export function readsOf(statements: RanStatement[]): RanStatement[] {
  return statements.filter(({ text }) => {
    const body = text.replace(PLANNED_PER_CALL, '').trim();
    return /^(SELECT|WITH)\b/i.test(body) && !/\b(INSERT|UPDATE|DELETE)\b/i.test(body) && !/FOR (UPDATE|SHARE|NO KEY UPDATE|KEY SHARE)\b/i.test(body);
  });
}

/** A node of EXPLAIN (ANALYZE, FORMAT JSON). */
interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  'Sort Method'?: string;
  Plans?: PlanNode[];
}

/** What one plan node read from a table (rows returned and rows it threw away, over all loops). */
export interface TableRead {
  node: string;
  /** The table (a partitioned table's name for a read of one of its partitions). */
  table: string;
  /** The partition read, for a partitioned table. */
  partition?: string;
  rows: number;
}

/** A partition of the delivery log (docs/delivery-log.md): `<table>_pYYYYMMDD` or `<table>_history`. */
const DELIVERY_LOG_PARTITION = /^(webhook_deliveries|webhook_delivery_attempts|webhook_payloads)_(history|p\d{8})$/;

function reads(node: PlanNode, into: TableRead[]): TableRead[] {
  if (node['Relation Name']) {
    const rows = (node['Actual Rows'] + (node['Rows Removed by Filter'] ?? 0) + (node['Rows Removed by Index Recheck'] ?? 0)) * node['Actual Loops'];
    // A partition's read counts as its table's (the bounds are the table's), naming the partition.
    const partition = DELIVERY_LOG_PARTITION.exec(node['Relation Name']);
    into.push({
      node: `${node['Node Type']}${node['Index Name'] ? ` using ${node['Index Name']}` : ''}`,
      table: partition ? partition[1] : node['Relation Name'],
      ...(partition ? { partition: node['Relation Name'] } : {}),
      rows,
    });
  }
  for (const child of node.Plans ?? []) reads(child, into);
  return into;
}

/** A value's text as the driver sends it (dates in ISO form, arrays as array literals, objects as JSON). */
function textOf(value: unknown): string {
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return `{${value.map((v) => (v === null ? 'NULL' : `"${textOf(v).replace(/["\\]/g, '\\$&')}"`)).join(',')}}`;
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** A value as a SQL literal, for EXECUTE. */
function literal(client: Client, value: unknown): string {
  return value === null || value === undefined ? 'NULL' : client.escapeLiteral(textOf(value));
}

let prepared = 0;

/**
 * The statement's plan as PostgreSQL runs it, both ways the service's connections may: planned
 * for these values (a statement's first five calls on a connection, and every call of one
 * planned per call) and, for a statement the service prepares, generic (what a prepared statement
 * may settle on from its sixth call). Answers what each plan node read from each table.
 * `settings` (a RanStatement's own) are made on the planning connection first, and undone after.
 */
export async function planReads(client: Client, statement: RanStatement, settings: string[] = []): Promise<{ custom: TableRead[]; generic: TableRead[] }> {
  const explain = async (mode: 'force_custom_plan' | 'force_generic_plan') => {
    await client.query(`SET plan_cache_mode = ${mode}`);
    const name = `plan_check_${++prepared}`;
    if (statement.values.length === 0) {
      const [row] = (await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${statement.text}`)).rows;
      return reads(row['QUERY PLAN'][0].Plan, []);
    }
    // Prepared as the service's client prepares it (the protocol's Parse, types inferred), then run by EXECUTE.
    await client.query({ name, text: statement.text, values: statement.values });
    const args = statement.values.map((v) => literal(client, v)).join(', ');
    const [row] = (await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE ${name}(${args})`)).rows;
    await client.query(`DEALLOCATE ${name}`);
    return reads(row['QUERY PLAN'][0].Plan, []);
  };
  // A statement without values, or marked planned per call, is never prepared: planned each time for its values.
  const prepares = statement.values.length > 0 && !statement.text.startsWith(PLANNED_PER_CALL);
  const names = settings.map((s) => /^SET\s+(?:LOCAL\s+)?(\w+)/i.exec(s)![1]);
  // A transaction that forces one kind of plan (`plan_cache_mode`) never runs the other.
  const forced = settings.map((s) => /^SET\s+(?:LOCAL\s+)?plan_cache_mode\s*(?:=|TO)\s*(\w+)/i.exec(s)?.[1]).find((mode) => mode !== undefined);
  try {
    for (const setting of settings) await client.query(setting.replace(/^SET\s+LOCAL\s+/i, 'SET '));
    return {
      custom: prepares && forced === 'force_generic_plan' ? [] : await explain('force_custom_plan'),
      generic: prepares && forced !== 'force_custom_plan' ? await explain('force_generic_plan') : [],
    };
  } finally {
    await client.query('RESET plan_cache_mode');
    for (const name of names) await client.query(`RESET ${name}`);
  }
}
