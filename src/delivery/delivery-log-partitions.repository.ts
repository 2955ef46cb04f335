import { setTimeout as sleep } from 'node:timers/promises';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { isLockNotAvailable } from '../common/errors';
import { ProbeDatabase } from '../health/readiness-checks';

/** The partitioned tables of the delivery log, in the order a day is dropped (attempts and payloads before their deliveries). */
export const DELIVERY_LOG_TABLES = ['webhook_delivery_attempts', 'webhook_deliveries', 'webhook_payloads'] as const;

/**
 * How long dropping one foreign key of a detached day may wait for the lock on the table it
 * references (every statement that needs that table queues behind the wait), and how often it
 * tries, 100 ms more apart each time (about 20 s in all), before retention gives up until its next run.
 */
const FOREIGN_KEY_LOCK_TIMEOUT_MS = 50;
const FOREIGN_KEY_DROP_TRIES = 20;
/** The pause between the drops of a detached day's indexes (dropIndexes): the unlinks' writes are spread out. */
const INDEX_DROP_PAUSE_MS = 200;
const DAY_MS = 86_400_000;

/** One partition of webhook_deliveries: a UTC day (`day` = YYYYMMDD) or the history, and its bounds. */
export interface DeliveryLogPartition {
  /** `YYYYMMDD`, or 'history'. */
  day: string;
  /** The start of the day (null for the history: MINVALUE). */
  from: Date | null;
  /** The end of the day (exclusive). */
  until: Date;
}

/**
 * SQL of the delivery log's partitions (migration DeliveryLogPartitions, docs/delivery-log.md):
 * making days ahead, listing them, and dropping a day from the three tables.
 */
@Injectable()
export class DeliveryLogPartitionsRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** delivery_log_create_partitions for the UTC days `from`..`to` (YYYY-MM-DD): idempotent, serialized; answers how many tables it made. */
  async create(from: string, to: string): Promise<number> {
    const [{ made }] = await this.dataSource.query(`SELECT delivery_log_create_partitions($1::date, $2::date) AS made`, [from, to]);
    return made;
  }

  /**
   * The days (and the history) of the delivery log, oldest first: every table named as a
   * partition of one of the three (`<table>_pYYYYMMDD`, `<table>_history`), attached or not, so
   * that a drop interrupted after one table (a crash, a failed DROP) is finished by the next run,
   * even once the deliveries' own partition is gone. Bounds come from the names (a day is its UTC
   * day; the history ends at delivery_log_history_until()), not from the catalog, which a
   * detached table no longer has. Tables of other names are not the log's days (unexpected()).
   */
  async list(): Promise<DeliveryLogPartition[]> {
    const rows: Array<{ part: string; history_until: Date }> = await this.dataSource.query(
      `SELECT DISTINCT substring(c.relname FROM '_(p[0-9]{8}|history)$') AS part, delivery_log_history_until() AS history_until
         FROM pg_class c
        WHERE c.relkind = 'r' AND pg_table_is_visible(c.oid)
          AND c.relname ~ '^(${DELIVERY_LOG_TABLES.join('|')})_(p[0-9]{8}|history)$'`,
    );
    return rows
      .map(({ part, history_until }): DeliveryLogPartition => {
        if (part === 'history') return { day: 'history', from: null, until: new Date(history_until) };
        const day = part.slice(1);
        const from = new Date(`${day.slice(0, 4)}-${day.slice(4, 6)}-${day.slice(6)}T00:00:00Z`);
        return { day, from, until: new Date(from.getTime() + DAY_MS) };
      })
      .filter((p) => !Number.isNaN(p.until.getTime()))
      .sort((a, b) => a.until.getTime() - b.until.getTime());
  }

  /**
   * Partitions of the three tables that are not the log's days: a DEFAULT partition an operator
   * added (DETACH ... CONCURRENTLY refuses to run while one exists, so no day could be dropped),
   * or a table of another name. Retention leaves them alone and says so.
   */
  async unexpected(): Promise<string[]> {
    const rows: Array<{ name: string }> = await this.dataSource.query(
      `SELECT c.relname AS name
         FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = ANY ($1::regclass[])
          AND (pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT' OR c.relname !~ '^(${DELIVERY_LOG_TABLES.join('|')})_(p[0-9]{8}|history)$')
        ORDER BY 1`,
      [DELIVERY_LOG_TABLES],
    );
    return rows.map((r) => r.name);
  }

  /**
   * For each of the three tables, the end of the span its attached partitions cover without a
   * gap from `at` on: `at` itself when no partition holds `at` (a row dated then cannot be
   * stored). Read on `database` (/ready's own connection, else the pool).
   */
  async coveredFrom(at: Date, database: ProbeDatabase = this.dataSource): Promise<Array<{ table: string; until: Date }>> {
    // The bounds cast by PostgreSQL (their text is in the session's time zone); MINVALUE is null, DEFAULT has none.
    const rows = await database.query<{ parent: string; from_ms: number | null; until_ms: number }>(
      `SELECT i.inhparent::regclass::text AS parent,
              (extract(epoch FROM b.m[1]::timestamptz) * 1000)::float8 AS from_ms, (extract(epoch FROM b.m[2]::timestamptz) * 1000)::float8 AS until_ms
         FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid,
              LATERAL (SELECT regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \\((?:MINVALUE|''([^'']+)'')\\) TO \\(''([^'']+)''\\)') AS m) b
        WHERE i.inhparent = ANY ($1::regclass[]) AND NOT i.inhdetachpending AND b.m IS NOT NULL`,
      [DELIVERY_LOG_TABLES],
    );
    return DELIVERY_LOG_TABLES.map((table) => {
      const spans = rows.filter((r) => r.parent === table).map((r) => ({ from: r.from_ms ?? -Infinity, until: r.until_ms }));
      let until = at.getTime();
      for (let next = spanHolding(spans, until); next; next = spanHolding(spans, until)) until = next.until;
      return { table, until: new Date(until) };
    });
  }

  /** Whether deliveries of the partition still wait (pending or retrying): such a day is not dropped. */
  async hasUnfinished(day: string): Promise<boolean> {
    const partition = partitionName('webhook_deliveries', day);
    // Gone already when an earlier drop stopped after the deliveries' table.
    const [{ present }] = await this.dataSource.query(`SELECT to_regclass($1) IS NOT NULL AS present`, [partition]);
    if (!present) return false;
    const [row] = await this.dataSource.query(`SELECT EXISTS (SELECT 1 FROM ${partition} WHERE status IN ('pending', 'retrying')) AS waiting`);
    return row.waiting;
  }

  /**
   * Drops the day (`YYYYMMDD` or 'history') from the three tables: each partition detached with
   * DETACH PARTITION ... CONCURRENTLY (outside a transaction: it never holds an ACCESS EXCLUSIVE
   * lock on the parent, so deliveries go on), its foreign keys dropped one by one
   * (dropForeignKeys), then its indexes one by one (dropIndexes), then the table. A detach
   * interrupted before is finalized; a day already gone is skipped, so a retry after a crash
   * finishes the work.
   */
  async drop(day: string): Promise<void> {
    for (const table of DELIVERY_LOG_TABLES) {
      const partition = partitionName(table, day);
      const [state] = await this.dataSource.query(
        `SELECT i.inhdetachpending AS pending FROM pg_inherits i WHERE i.inhrelid = to_regclass($1) AND i.inhparent = $2::regclass`,
        [partition, table],
      );
      if (state?.pending) await this.dataSource.query(`ALTER TABLE ${table} DETACH PARTITION ${partition} FINALIZE`);
      else if (state) await this.dataSource.query(`ALTER TABLE ${table} DETACH PARTITION ${partition} CONCURRENTLY`);
      await this.dropForeignKeys(partition);
      await this.dropIndexes(partition);
      await this.dataSource.query(`DROP TABLE IF EXISTS ${partition}`);
    }
  }

  /**
   * Drops the indexes of a detached partition, each in its own statement (an index that backs a
   * constraint, through the constraint), INDEX_DROP_PAUSE_MS apart. A file is unlinked when the
   * statement that drops it commits: a day of 10,000,000 deliveries has about 10 GB of them, and
   * spread out they slow the other statements less (an INSERT's median during the drop went from
   * 10 to 3 ms; the worst cases stayed within noise, docs/BENCHMARKS.md). Nothing uses the
   * detached table, so its locks wait for no one.
   */
  private async dropIndexes(partition: string): Promise<void> {
    const indexes: Array<{ name: string; constraint: string | null }> = await this.dataSource.query(
      `SELECT i.relname AS name, c.conname AS constraint
         FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
         LEFT JOIN pg_constraint c ON c.conindid = x.indexrelid AND c.conrelid = x.indrelid
        WHERE x.indrelid = to_regclass($1) ORDER BY i.relname`,
      [partition],
    );
    for (const [n, { name, constraint }] of indexes.entries()) {
      if (n > 0) await sleep(INDEX_DROP_PAUSE_MS);
      await this.dataSource.query(
        constraint ? `ALTER TABLE ${partition} DROP CONSTRAINT IF EXISTS ${quoteIdent(constraint)}` : `DROP INDEX IF EXISTS ${quoteIdent(name)}`,
      );
    }
  }

  /**
   * Drops the foreign keys of a detached partition (a deliveries day's, to webhook_endpoints and
   * users), each in a statement of its own that waits at most FOREIGN_KEY_LOCK_TIMEOUT_MS for
   * its referenced table's lock, and tries again later when that ran out. Dropping the table with
   * them took an ACCESS EXCLUSIVE lock on each referenced table in one transaction: it waited
   * behind every open transaction that had checked a delivery's endpoint, every statement on
   * those tables queued behind it (inserts of deliveries waited 1 s), and holding the lock on
   * users while waiting for webhook_endpoints it deadlocked with an insert (bench
   * --partition-drop, docs/BENCHMARKS.md).
   */
  private async dropForeignKeys(partition: string): Promise<void> {
    const keys: Array<{ name: string }> = await this.dataSource.query(
      `SELECT conname AS name FROM pg_constraint WHERE conrelid = to_regclass($1) AND contype = 'f' ORDER BY conname`,
      [partition],
    );
    for (const { name } of keys) {
      for (let tries = 1; ; tries += 1) {
        try {
          // One statement, its own transaction: the timeout is set for it alone.
          await this.dataSource.query(
            `DO $drop$ BEGIN
               PERFORM set_config('lock_timeout', '${FOREIGN_KEY_LOCK_TIMEOUT_MS}ms', true);
               ALTER TABLE ${partition} DROP CONSTRAINT IF EXISTS ${quoteIdent(name)};
             END $drop$`,
          );
          break;
        } catch (error) {
          if (!isLockNotAvailable(error) || tries >= FOREIGN_KEY_DROP_TRIES) throw error;
          await sleep(100 * tries);
        }
      }
    }
  }
}

function spanHolding(spans: Array<{ from: number; until: number }>, at: number): { from: number; until: number } | undefined {
  return spans.find((span) => span.from <= at && at < span.until);
}

/** `<table>_pYYYYMMDD` or `<table>_history`. */
export function partitionName(table: string, day: string): string {
  if (day !== 'history' && !/^\d{8}$/.test(day)) throw new Error(`not a delivery log day: ${day}`);
  return day === 'history' ? `${table}_history` : `${table}_p${day}`;
}

/** A name quoted as an SQL identifier. */
function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
