/**
 * How a delivery id finds its partition (docs/delivery-log.md, migration DeliveryLogPartitions):
 * the log is partitioned by UTC day of created_at, and a delivery's id is a UUIDv7 whose time is
 * its created_at to the millisecond (trigger webhook_deliveries_ids, for every INSERT path), so
 * `delivery_log_created_at(id)` gives the row's partition key exactly. An id from before the
 * migration (a v4: the function answers null) is in the history partition, below
 * `delivery_log_history_until()`. Every lookup by id goes through these fragments, so a get reads
 * one partition (plus the history for an old id), never all of them.
 */

/** SQL: `alias` (webhook_deliveries) is the delivery whose id is the SQL expression `id`. */
export function deliveryById(alias: string, id: string): string {
  return `(${alias}.id = ${id} AND (${alias}.created_at = delivery_log_created_at(${id})
          OR (delivery_log_created_at(${id}) IS NULL AND ${alias}.created_at < delivery_log_history_until())))`;
}

/**
 * SQL: the partition key of the attempts of the delivery whose id is `id`: its created_at, or
 * '-infinity' for a delivery from before the migration (the default its old attempts took).
 */
export function attemptKeyOf(id: string): string {
  return `coalesce(delivery_log_created_at(${id}), '-infinity')`;
}

/**
 * SQL: `attempt` (webhook_delivery_attempts) is an attempt of the delivery whose id is `id`: in
 * its delivery's day, or in the history under '-infinity' (the column's default: an attempt of a
 * delivery from before the migration, or one recorded by a process of the previous build during
 * the rolling deploy). Two partitions at most.
 */
export function attemptOf(attempt: string, id: string): string {
  return `(${attempt}.delivery_id = ${id} AND ${attempt}.delivery_created_at IN (${attemptKeyOf(id)}, '-infinity'))`;
}

/**
 * SQL: `payload` (webhook_payloads) is the payload of `delivery`. A payload is stored in the day
 * of the deliveries that use it (created_at = that day's start, PAYLOAD_DAY at insert; a resend
 * or recovery copies its payload into its own day), or in the history for older deliveries.
 */
export function payloadOf(payload: string, delivery: string): string {
  return `(${payload}.id = ${delivery}.payload_id AND (${payload}.created_at = delivery_log_day(${delivery}.created_at)
          OR ${payload}.created_at < delivery_log_history_until()))`;
}

/**
 * SQL: the created_at of a payload stored now, the key it is shared under with its day's
 * deliveries (with its digest): the day of now() rounded to the millisecond as a delivery's
 * created_at is, so that at 23:59:59.9995 both are in the next day.
 */
export const PAYLOAD_DAY = 'delivery_log_day(now()::timestamptz(3))';

/** The three tables of one day of the delivery log, or of its history partition. */
export interface DeliveryLogTables {
  deliveries: string;
  attempts: string;
  payloads: string;
}

const HISTORY_TABLES: DeliveryLogTables = {
  deliveries: 'webhook_deliveries_history',
  attempts: 'webhook_delivery_attempts_history',
  payloads: 'webhook_payloads_history',
};

/**
 * The partitions holding the delivery `id` (and its attempts and payload), named as
 * delivery_log_create_partitions names them: the day of its UUIDv7 time (what
 * delivery_log_created_at reads in SQL), or the history for an id from before the migration or a
 * time before `historyUntil` (delivery_log_history_until(), epoch ms). For the worker's batch
 * statements, which name the partition instead of planning over all of them.
 */
export function deliveryLogTablesOf(id: string, historyUntil: number): DeliveryLogTables {
  if (id.charAt(14) !== '7') return HISTORY_TABLES;
  const createdAt = parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
  if (!(createdAt >= historyUntil)) return HISTORY_TABLES;
  const day = new Date(createdAt).toISOString().slice(0, 10).replace(/-/g, '');
  return { deliveries: `webhook_deliveries_p${day}`, attempts: `webhook_delivery_attempts_p${day}`, payloads: `webhook_payloads_p${day}` };
}

/** `items` grouped by the partitions of their delivery (deliveryLogTablesOf), in first-seen order. */
export function byDeliveryLogTables<T>(items: T[], deliveryIdOf: (item: T) => string, historyUntil: number): Array<[DeliveryLogTables, T[]]> {
  const groups = new Map<string, [DeliveryLogTables, T[]]>();
  for (const item of items) {
    const tables = deliveryLogTablesOf(deliveryIdOf(item), historyUntil);
    const group = groups.get(tables.deliveries);
    if (group) group[1].push(item);
    else groups.set(tables.deliveries, [tables, [item]]);
  }
  return [...groups.values()];
}

/**
 * SQL: the payloads a delivery in `tables` may use, as payloadOf finds them: its day's partition
 * and the history (a payload stored before the migration).
 */
export function payloadsFor(tables: DeliveryLogTables): string {
  return tables === HISTORY_TABLES || tables.payloads === HISTORY_TABLES.payloads
    ? HISTORY_TABLES.payloads
    : `(SELECT id, data FROM ${tables.payloads} UNION ALL SELECT id, data FROM ${HISTORY_TABLES.payloads})`;
}
