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

  /** The partitions of webhook_deliveries (the other tables have the same days), oldest first. */
  async list(): Promise<DeliveryLogPartition[]> {
    const rows: Array<{ name: string; bound: string }> = await this.dataSource.query(
      `SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
         FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'webhook_deliveries'::regclass`,
    );
    return rows
      .map((r) => {
        const [from, until] = [...r.bound.matchAll(/'([^']+)'/g)].map((m) => new Date(m[1]));
        return r.name === 'webhook_deliveries_history'
          ? { day: 'history', from: null, until: from }
          : { day: r.name.slice('webhook_deliveries_p'.length), from, until };
      })
      .sort((a, b) => a.until.getTime() - b.until.getTime());
  }

  /**
   * The end of webhook_deliveries' last partition (a day's, or the history's when no day follows
   * it), read on `database` (/ready's own connection, else the pool); null when the table has no partition.
   */
  async lastUntil(database: ProbeDatabase = this.dataSource): Promise<Date | null> {
    const [row] = await database.query<{ until: Date | null }>(
      `SELECT max(substring(pg_get_expr(c.relpartbound, c.oid) FROM 'TO \\(''([^'']+)''\\)')::timestamptz) AS until
         FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'webhook_deliveries'::regclass`,
    );
    return row?.until ? new Date(row.until) : null;
  }

  /** Whether deliveries of the partition still wait (pending or retrying): such a day is not dropped. */
  async hasUnfinished(day: string): Promise<boolean> {
    const [row] = await this.dataSource.query(
      `SELECT EXISTS (SELECT 1 FROM ${partitionName('webhook_deliveries', day)} WHERE status IN ('pending', 'retrying')) AS waiting`,
    );
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

/** `<table>_pYYYYMMDD` or `<table>_history`. */
export function partitionName(table: string, day: string): string {
  if (day !== 'history' && !/^\d{8}$/.test(day)) throw new Error(`not a delivery log day: ${day}`);
  return day === 'history' ? `${table}_history` : `${table}_p${day}`;
}

/** A name quoted as an SQL identifier. */
function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
