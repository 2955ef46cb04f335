import { Client } from 'pg';

/**
 * Fills the delivery log (webhook_payloads, webhook_deliveries, webhook_delivery_attempts) with
 * `rows` finished deliveries in three INSERT ... SELECT generate_series statements, on the tables
 * as they are, indexes and all: the 1,000,000-row conversion test (test/reliability) and the drop
 * bench (bench/partition-drop.ts) fill with it.
 *
 * The shape of a busy installation: each event fanned out to two endpoints (two deliveries share
 * one payload, as the fan-out stores a content once), 1 in 50 deliveries failed after 3 attempts,
 * the others succeeded at their first; created_at spread evenly over [from, to). Works before and
 * after the day partitioning (attempts get `delivery_created_at` when the table has it; a trigger
 * that derives ids from created_at may replace the ids given here).
 */
export interface DeliveryLogFill {
  rows: number;
  from: Date;
  to: Date;
  userId: string;
  endpointIds: string[];
  /** Distinguishes the fill's digests and event ids from another fill's. */
  tag: string;
}

export interface FillResult {
  payloads: number;
  deliveries: number;
  attempts: number;
  ms: { payloads: number; deliveries: number; attempts: number };
}

/**
 * Issue 46's migrations (the day partitioning of the delivery log) have timestamps from here on:
 * `runMigrations(url, { before: DAY_PARTITIONING_MIGRATIONS })` is an installation before them.
 */
export const DAY_PARTITIONING_MIGRATIONS = 1_763_801_000_000;

/** Source event ids of filled rows start here, far above the outbox ids a live run creates. */
const FILL_SOURCE_EVENT_BASE = 1_000_000_000_000;

/** After the day partitioning, an attempt carries its delivery's created_at (its partition key). */
export async function attemptsHaveDayKey(db: Pick<Client, 'query'>): Promise<boolean> {
  const r = await db.query(`SELECT 1 FROM information_schema.columns WHERE table_name = 'webhook_delivery_attempts' AND column_name = 'delivery_created_at'`);
  return r.rowCount === 1;
}

export async function fillDeliveryLog(db: Client, fill: DeliveryLogFill): Promise<FillResult> {
  const payloadRows = Math.ceil(fill.rows / 2);
  const span = `($2::timestamptz + (g - 1) * (($3::timestamptz - $2::timestamptz) / $1::int))`;
  const timed = async (sql: string, params: unknown[]) => {
    const started = Date.now();
    const r = await db.query(sql, params);
    return { count: r.rowCount ?? 0, ms: Date.now() - started };
  };
  const [{ base }] = (await db.query(`SELECT coalesce(max(id), 0)::bigint AS base FROM webhook_payloads`)).rows as Array<{ base: string }>;
  const payloads = await timed(
    `INSERT INTO webhook_payloads (id, digest, data, created_at) OVERRIDING SYSTEM VALUE
     SELECT $4::bigint + g, sha256(convert_to($5 || '-' || g, 'UTF8')),
            json_build_object('type', 'message.received', 'id', 'evt_' || md5($5 || '-' || g), 'data',
              json_build_object('id', 'msg_' || md5(g::text), 'from', '+1555' || lpad((g % 1000000)::text, 7, '0'),
                                'text', 'filled message number ' || g || ' of the delivery log, about as long as an SMS')),
            ${span}
       FROM generate_series(1, $1::int) g`,
    [payloadRows, fill.from, fill.to, base, fill.tag],
  );
  const sequence = (await db.query(`SELECT pg_get_serial_sequence('webhook_payloads', 'id') AS s`)).rows[0]?.s as string | null;
  if (sequence) await db.query(`SELECT setval($1::regclass, (SELECT max(id) FROM webhook_payloads))`, [sequence]);

  const deliveries = await timed(
    `INSERT INTO webhook_deliveries (id, event_id, endpoint_id, user_id, source_event_id, event_type, mode, event_created_at,
                                     status, attempt_count, last_status_code, last_attempt_at, created_at, updated_at, payload_id)
     SELECT gen_random_uuid(), 'evt_' || md5($5 || '/' || g), ($6::uuid[])[1 + g % cardinality($6::uuid[])], $7::uuid,
            $8::bigint + g, 'message.received', 'concise', t.at,
            CASE WHEN g % 50 = 0 THEN 'failed' ELSE 'succeeded' END, CASE WHEN g % 50 = 0 THEN 3 ELSE 1 END,
            CASE WHEN g % 50 = 0 THEN 500 ELSE 200 END, t.at + interval '80 ms', t.at, t.at + interval '80 ms', $4::bigint + (g + 1) / 2
       FROM generate_series(1, $1::int) g, LATERAL (SELECT ${span} AS at) t`,
    [fill.rows, fill.from, fill.to, base, fill.tag, fill.endpointIds, fill.userId, FILL_SOURCE_EVENT_BASE],
  );
  const hasDayKey =
    (await db.query(`SELECT 1 FROM information_schema.columns WHERE table_name = 'webhook_delivery_attempts' AND column_name = 'delivery_created_at'`))
      .rowCount === 1;
  const attempts = await timed(
    `INSERT INTO webhook_delivery_attempts (delivery_id, attempt_number, attempted_at, duration_ms, status_code, response_body
                                            ${hasDayKey ? ', delivery_created_at' : ''})
     SELECT d.id, n, d.created_at + n * interval '20 ms', 35 + n, d.last_status_code,
            CASE WHEN d.status = 'failed' THEN 'upstream error' ELSE 'ok' END ${hasDayKey ? ', d.created_at' : ''}
       FROM webhook_deliveries d, generate_series(1, d.attempt_count) n
      WHERE d.created_at >= $1 AND d.created_at < $2 AND d.source_event_id > $3`,
    [fill.from, fill.to, FILL_SOURCE_EVENT_BASE],
  );
  return {
    payloads: payloads.count,
    deliveries: deliveries.count,
    attempts: attempts.count,
    ms: { payloads: payloads.ms, deliveries: deliveries.ms, attempts: attempts.ms },
  };
}
