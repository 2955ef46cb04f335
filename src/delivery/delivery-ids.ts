/**
 * How a delivery id finds its partition (docs/delivery-log.md, migration DeliveryLogPartitions):
 * the log is partitioned by UTC day of created_at, and a delivery's id is a UUIDv7 whose time is
 * its created_at to the millisecond (trigger webhook_deliveries_ids, for every INSERT path), so
 * `delivery_log_created_at(id)` gives the row's partition key exactly (fan-out names both in its
 * INSERT, NEW_DELIVERY_IDS, and the trigger leaves a row alone whose ids agree). An id from
 * before the migration (a v4: the function answers null) is in the history partition, below
 * `delivery_log_history_until()`. Every lookup by id goes through these fragments, so a get reads
 * one partition (plus the history for an old id), never all of them.
 */

/** SQL: `alias` (webhook_deliveries) is the delivery whose id is the SQL expression `id`. */
export function deliveryById(alias: string, id: string): string {
  return `(${alias}.id = ${id} AND (${alias}.created_at = delivery_log_created_at(${id})
          OR (delivery_log_created_at(${id}) IS NULL AND ${alias}.created_at < delivery_log_history_until())))`;
}

/** SQL: now() cut to the millisecond, as a delivery's created_at (`timestamptz(3)`) and its id's time are. */
const NOW_MS = 'now()::timestamptz(3)';

/** SQL: a new delivery's id (a UUIDv7 of NOW_MS), one per row of the FROM that selects it. */
export const NEW_DELIVERY_UUID = `delivery_log_uuid7(${NOW_MS})`;

/**
 * SQL select-list items `id, event_id, created_at` of a delivery inserted now: what the trigger
 * webhook_deliveries_ids makes for a row that comes without them, in the statement itself, which
 * costs a row no PL/pgSQL call (migration DeliveryIdsInStatement: the trigger checks them and
 * runs only when they do not agree). The id's time and created_at are the same millisecond.
 * `uuid` names a column the statement's FROM gives each row from NEW_DELIVERY_UUID, so that the
 * two items that use it read one value.
 */
export const NEW_DELIVERY_IDS = (uuid: string): string => `${uuid}, 'evt_' || replace(${uuid}::text, '-', ''), ${NOW_MS}`;

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
export const PAYLOAD_DAY = `delivery_log_day(${NOW_MS})`;

/**
 * Where the worker's batch statements find a group of deliveries: the three partitions holding
 * them (one day's, or the history's), and whether every id in the group names its created_at.
 */
export interface DeliveryLogGroup {
  deliveries: string;
  attempts: string;
  payloads: string;
  /**
   * The ids are UUIDv7s, so a statement matches a row on its whole primary key (id, created_at).
   * On the id alone (a key's prefix) PostgreSQL cannot tell one row from many: on a partition
   * not analyzed yet (a new day's first minute, a fresh install's history) it guessed 0.5 % of the
   * table per id, and the claim combined the primary key with the index of every waiting
   * delivery, reading all of them for each row claimed.
   */
  exact: boolean;
}

/** The end of the last day a partition's name (`_pYYYYMMDD`) can name: 9999-12-31. */
const LAST_DAY_END_MS = Date.UTC(10000, 0, 1) - 1;

const HISTORY = { deliveries: 'webhook_deliveries_history', attempts: 'webhook_delivery_attempts_history', payloads: 'webhook_payloads_history' };

/** The created_at a delivery id names (its UUIDv7 time, as delivery_log_created_at reads it in SQL), or null for an id from before the migration (a v4). */
export function createdAtOfId(id: string): Date | null {
  return id.charAt(14) === '7' ? new Date(parseInt(id.slice(0, 8) + id.slice(9, 13), 16)) : null;
}

/**
 * The group of the delivery `id`, its partitions named as delivery_log_create_partitions names
 * them: the UTC day of its created_at, or the history for an id from before the migration or a
 * time before `historyUntil` (delivery_log_history_until(), epoch ms). For the worker's batch
 * statements, which name the partitions instead of planning every one of them. Null for an id
 * whose time is past the year 9999 (a UUIDv7 can name times to 10889): no partition can hold it,
 * and its day would not make a table's name.
 */
export function deliveryLogGroupOf(id: string, historyUntil: number): DeliveryLogGroup | null {
  const createdAt = createdAtOfId(id);
  if (createdAt === null) return { ...HISTORY, exact: false };
  if (!(createdAt.getTime() >= historyUntil)) return { ...HISTORY, exact: true };
  if (createdAt.getTime() > LAST_DAY_END_MS) return null;
  const day = createdAt.toISOString().slice(0, 10).replace(/-/g, '');
  return { deliveries: `webhook_deliveries_p${day}`, attempts: `webhook_delivery_attempts_p${day}`, payloads: `webhook_payloads_p${day}`, exact: true };
}

/**
 * `items` grouped by deliveryLogGroupOf their delivery, in first-seen order; those of an id no
 * partition can hold are left out, as the deliveries of a dropped day are found in none.
 */
export function byDeliveryLogGroup<T>(items: T[], deliveryIdOf: (item: T) => string, historyUntil: number): Array<[DeliveryLogGroup, T[]]> {
  const groups = new Map<string, [DeliveryLogGroup, T[]]>();
  for (const item of items) {
    const group = deliveryLogGroupOf(deliveryIdOf(item), historyUntil);
    if (group === null) continue;
    const key = `${group.deliveries}:${group.exact}`;
    const found = groups.get(key);
    if (found) found[1].push(item);
    else groups.set(key, [group, [item]]);
  }
  return [...groups.values()];
}

/**
 * SQL: `d` (in `group`'s deliveries partition) is the delivery whose id and created_at are the
 * SQL expressions `id` and `createdAt` (createdAtOfId's, null for an old id).
 */
export function deliveryIn(group: DeliveryLogGroup, d: string, id: string, createdAt: string): string {
  return group.exact ? `(${d}.id = ${id} AND ${d}.created_at = ${createdAt})` : `${d}.id = ${id}`;
}

/**
 * SQL: a subquery of the stored payload (its `data`) of `d`, a delivery in `group`, to join
 * LATERAL: in its day's partition under its day (payloadOf's first case: the whole primary key),
 * or in the history (a payload stored before the migration; the history's own deliveries).
 */
export function payloadIn(group: DeliveryLogGroup, d: string): string {
  const history = `SELECT ph.data FROM ${HISTORY.payloads} ph WHERE ph.id = ${d}.payload_id`;
  return group.payloads === HISTORY.payloads
    ? `(${history} LIMIT 1)`
    : `(SELECT pd.data FROM ${group.payloads} pd WHERE pd.id = ${d}.payload_id AND pd.created_at = delivery_log_day(${d}.created_at)
        UNION ALL ${history} LIMIT 1)`;
}
