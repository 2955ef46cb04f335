import { MigrationInterface, QueryRunner } from 'typeorm';
import { createIndexUnlessBuilt } from './prebuilt-index';

/**
 * Issue 46: the delivery log (webhook_deliveries, webhook_delivery_attempts, webhook_payloads)
 * becomes native range partitions by UTC day, with no DEFAULT partition, so that retention drops
 * whole days (docs/delivery-log.md). Without downtime and without moving a row: each existing
 * table is attached as its parent's history partition, FROM (MINVALUE) TO (the start of the day
 * after tomorrow, UTC), and day partitions follow it.
 *
 * 1. Outside any transaction (this migration has `transaction = false`): the indexes the
 *    partitioned parents need that the old tables lack (unique keys must contain the partition
 *    key) are built unless an operator built them before with CREATE UNIQUE INDEX CONCURRENTLY
 *    (prebuilt-index.ts; the commands are in docs/delivery-log.md: the migration cannot build
 *    concurrently itself, as that waits for the other replicas waiting on the migration lock),
 *    and a CHECK matching the history bound is added NOT VALID then VALIDATEd (SHARE UPDATE
 *    EXCLUSIVE: writes go on), so the ATTACH below skips its scan.
 * 2. One short transaction, ACCESS EXCLUSIVE on the three tables for catalog work only: the
 *    foreign keys to the three tables are dropped (they would block DETACH/DROP of a day), the old
 *    primary keys are replaced by the prebuilt (id, key) ones (USING INDEX), the old tables are
 *    renamed `<table>_history`, the parents created with the same columns, and the old tables
 *    attached; their other indexes match the parents' and are attached, not built.
 * 3. After that transaction, the day partitions from the bound on, seven days ahead
 *    (delivery_log_create_partitions).
 *
 * Names (stable; the drop bench and docs use them): partitions `<table>_pYYYYMMDD` and
 * `<table>_history`; functions delivery_log_day(timestamptz), delivery_log_history_until(),
 * delivery_log_uuid7(timestamptz), delivery_log_created_at(uuid),
 * delivery_log_create_partitions(from date, to date). Dropping a day is not a function (DETACH
 * ... CONCURRENTLY cannot run inside one): src/delivery/delivery-log-partitions.ts.
 *
 * Down puts the three tables back as they were (the rows of every partition copied back into the
 * history table, which becomes the plain table again); it is for tests, not for a large log.
 */
export class DeliveryLogPartitions1763801000000 implements MigrationInterface {
  name = 'DeliveryLogPartitions1763801000000';
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    const [{ until }] = await q.query(`SELECT to_char(date_trunc('day', now(), 'UTC') + interval '2 days', 'YYYY-MM-DD"T00:00:00Z"') AS until`);
    // Attempts get the partition key of their delivery's day. Old attempts (of the history) take
    // '-infinity' (a constant default: no table rewrite), which is inside the history bound.
    await q.query(`ALTER TABLE webhook_delivery_attempts ADD COLUMN IF NOT EXISTS delivery_created_at timestamptz(3) NOT NULL DEFAULT '-infinity'`);
    const prebuilt: Array<[string, string]> = [
      ['webhook_deliveries_history_pkey', `ON webhook_deliveries (id, created_at)`],
      ['webhook_deliveries_history_event_id_key', `ON webhook_deliveries (event_id, created_at)`],
      [
        'webhook_deliveries_history_source_endpoint_key',
        `ON webhook_deliveries (source_event_id, endpoint_id, created_at) WHERE source_event_id IS NOT NULL AND resent_from_id IS NULL`,
      ],
      ['webhook_delivery_attempts_history_pkey', `ON webhook_delivery_attempts (id, delivery_created_at)`],
      ['webhook_delivery_attempts_history_number_key', `ON webhook_delivery_attempts (delivery_id, attempt_number, delivery_created_at)`],
      ['webhook_payloads_history_pkey', `ON webhook_payloads (id, created_at)`],
      ['webhook_payloads_history_digest_key', `ON webhook_payloads (digest, created_at)`],
    ];
    for (const [name, definition] of prebuilt) await createIndexUnlessBuilt(q, name, definition, { unique: true });
    for (const [table, key] of TABLES) {
      await q.query(`ALTER TABLE ${table} DROP CONSTRAINT IF EXISTS ${table}_history_bound`);
      await q.query(`ALTER TABLE ${table} ADD CONSTRAINT ${table}_history_bound CHECK (${key} < '${until}') NOT VALID`);
      await q.query(`ALTER TABLE ${table} VALIDATE CONSTRAINT ${table}_history_bound`);
    }

    await q.startTransaction();
    try {
      await q.query(`SET LOCAL lock_timeout = '10s'`);
      await q.query(`LOCK TABLE webhook_payloads, webhook_deliveries, webhook_delivery_attempts IN ACCESS EXCLUSIVE MODE`);
      await q.query(`ALTER TABLE webhook_delivery_attempts DROP CONSTRAINT webhook_delivery_attempts_delivery_id_fkey`);
      await q.query(`ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_resent_from_id_fkey`);
      await q.query(`ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_payload_fkey`);
      await q.query(`ALTER TABLE webhook_delivery_attempts DROP CONSTRAINT webhook_delivery_attempts_delivery_id_attempt_number_key`);
      // The parent's (delivery_id, attempt_number, key) is a UNIQUE constraint: ATTACH reuses a
      // partition's index for it only when that index backs a constraint too, else it builds one
      // under this lock (about 1 s a million attempts).
      await q.query(
        `ALTER TABLE webhook_delivery_attempts ADD CONSTRAINT webhook_delivery_attempts_history_number_key UNIQUE USING INDEX webhook_delivery_attempts_history_number_key`,
      );
      await q.query(`DROP INDEX webhook_deliveries_event_id_key, webhook_deliveries_source_endpoint_key, webhook_payloads_digest_key`);
      for (const [table] of TABLES) {
        await q.query(`ALTER TABLE ${table} DROP CONSTRAINT ${table}_pkey`);
        await q.query(`ALTER TABLE ${table} ADD CONSTRAINT ${table}_history_pkey PRIMARY KEY USING INDEX ${table}_history_pkey`);
        await q.query(`ALTER TABLE ${table} RENAME TO ${table}_history`);
      }
      // The remaining indexes keep their shape; renamed so that the parents' take their names.
      for (const name of RENAMED_INDEXES) await q.query(`ALTER INDEX ${name} RENAME TO ${historyName(name)}`);
      await q.query(PARENTS);
      for (const [table] of TABLES) {
        await q.query(`ALTER TABLE ${table} ATTACH PARTITION ${table}_history FOR VALUES FROM (MINVALUE) TO ('${until}')`);
        await q.query(`ALTER TABLE ${table}_history DROP CONSTRAINT ${table}_history_bound`);
      }
      await q.query(functions(until));
      await q.query(`CREATE TRIGGER webhook_deliveries_ids BEFORE INSERT ON webhook_deliveries FOR EACH ROW EXECUTE FUNCTION webhook_deliveries_ids()`);
      await q.query(
        `CREATE TRIGGER webhook_deliveries_attempts_gone AFTER DELETE ON webhook_deliveries FOR EACH ROW EXECUTE FUNCTION webhook_deliveries_attempts_gone()`,
      );
      await q.commitTransaction();
    } catch (error) {
      await q.rollbackTransaction();
      throw error;
    }
    // After the commit, outside the lock: the history takes every row until its bound (the day after
    // tomorrow), so the days after it are not needed before then.
    await q.query(`SELECT delivery_log_create_partitions((now() AT TIME ZONE 'UTC')::date, (now() AT TIME ZONE 'UTC')::date + 7)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.startTransaction();
    try {
      for (const [table] of TABLES) {
        const parts: Array<{ name: string }> = await q.query(
          `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = $1::regclass AND c.relname <> $2`,
          [table, `${table}_history`],
        );
        await q.query(`ALTER TABLE ${table} DETACH PARTITION ${table}_history`);
        for (const { name } of parts) {
          await q.query(`ALTER TABLE ${table} DETACH PARTITION ${name}`);
          const columns = table === 'webhook_payloads' ? `OVERRIDING SYSTEM VALUE ` : '';
          await q.query(`INSERT INTO ${table}_history ${columns}SELECT * FROM ${name}`);
          await q.query(`DROP TABLE ${name}`);
        }
        await q.query(`DROP TABLE ${table}`);
      }
      await q.query(
        `DROP FUNCTION webhook_deliveries_ids(), webhook_deliveries_attempts_gone(), delivery_log_create_partitions(date, date), delivery_log_created_at(uuid),
                       delivery_log_uuid7(timestamptz), delivery_log_history_until(), delivery_log_day(timestamptz)`,
      );
      for (const name of RENAMED_INDEXES) await q.query(`ALTER INDEX ${historyName(name)} RENAME TO ${name}`);
      for (const [table] of TABLES) {
        await q.query(`ALTER TABLE ${table}_history RENAME TO ${table}`);
        await q.query(`ALTER TABLE ${table} DROP CONSTRAINT ${table}_history_pkey`);
        await q.query(`ALTER TABLE ${table} ADD PRIMARY KEY (id)`);
      }
      await q.query(`CREATE UNIQUE INDEX webhook_deliveries_event_id_key ON webhook_deliveries (event_id)`);
      await q.query(`CREATE UNIQUE INDEX webhook_deliveries_source_endpoint_key ON webhook_deliveries (source_event_id, endpoint_id)
                       WHERE source_event_id IS NOT NULL AND resent_from_id IS NULL`);
      // A content stored on several days becomes one row again: its first.
      await q.query(`UPDATE webhook_deliveries d SET payload_id = k.keep
                       FROM (SELECT id, min(id) OVER (PARTITION BY digest) AS keep FROM webhook_payloads) k
                      WHERE k.id = d.payload_id AND k.keep <> k.id`);
      await q.query(`DELETE FROM webhook_payloads p WHERE EXISTS (SELECT 1 FROM webhook_payloads o WHERE o.digest = p.digest AND o.id < p.id)`);
      await q.query(`CREATE UNIQUE INDEX webhook_payloads_digest_key ON webhook_payloads (digest)`);
      await q.query(`DROP INDEX webhook_deliveries_history_event_id_key, webhook_deliveries_history_source_endpoint_key, webhook_payloads_history_digest_key`);
      await q.query(`ALTER TABLE webhook_delivery_attempts DROP CONSTRAINT IF EXISTS webhook_delivery_attempts_history_number_key`);
      await q.query(`DROP INDEX IF EXISTS webhook_delivery_attempts_history_number_key`);
      await q.query(
        `ALTER TABLE webhook_delivery_attempts ADD CONSTRAINT webhook_delivery_attempts_delivery_id_attempt_number_key UNIQUE (delivery_id, attempt_number)`,
      );
      await q.query(`ALTER TABLE webhook_delivery_attempts DROP COLUMN delivery_created_at`);
      await q.query(`ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_payload_fkey FOREIGN KEY (payload_id) REFERENCES webhook_payloads (id)`);
      await q.query(
        `ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_resent_from_id_fkey FOREIGN KEY (resent_from_id) REFERENCES webhook_deliveries (id) ON DELETE SET NULL`,
      );
      await q.query(
        `ALTER TABLE webhook_delivery_attempts ADD CONSTRAINT webhook_delivery_attempts_delivery_id_fkey FOREIGN KEY (delivery_id) REFERENCES webhook_deliveries (id) ON DELETE CASCADE`,
      );
      await q.commitTransaction();
    } catch (error) {
      await q.rollbackTransaction();
      throw error;
    }
  }
}

/** Each table and its partition key. */
const TABLES: Array<[string, string]> = [
  ['webhook_payloads', 'created_at'],
  ['webhook_deliveries', 'created_at'],
  ['webhook_delivery_attempts', 'delivery_created_at'],
];

/** webhook_deliveries_due_idx -> webhook_deliveries_history_due_idx: the old table's index, as a partition's. */
const historyName = (name: string) => name.replace(/^(webhook_deliveries|webhook_payloads)_/, '$1_history_');

const RENAMED_INDEXES = [
  'webhook_deliveries_endpoint_page_idx',
  'webhook_deliveries_endpoint_status_idx',
  'webhook_deliveries_due_idx',
  'webhook_deliveries_payload_idx',
  'webhook_deliveries_finished_idx',
  'webhook_deliveries_resent_from_idx',
  'webhook_deliveries_recover_idx',
  'webhook_payloads_created_idx',
];

const EVENT_KINDS = `'message.received', 'message.sent', 'message.status_changed', 'thread.created', 'email.opened', 'attachment.extracted', 'contact.merged',
  'email_account.health_changed', 'agent_turn.awaiting_approval', 'agent_turn.sent', 'sms.opted_out', 'sms.opted_in', 'agent_turn.rejected'`;

/**
 * The partitioned parents, with the old tables' columns (in their order), checks and foreign keys
 * to endpoints and users (the history's own ones match and are attached). Their ids are made by
 * the trigger webhook_deliveries_ids (payload ids keep the old identity's sequence).
 */
const PARENTS = `
  CREATE TABLE webhook_payloads (
    id bigint NOT NULL DEFAULT nextval('webhook_payloads_id_seq'),
    digest bytea NOT NULL CONSTRAINT webhook_payloads_digest_check CHECK (octet_length(digest) = 32),
    data json NOT NULL,
    created_at timestamptz(3) NOT NULL DEFAULT now(),
    CONSTRAINT webhook_payloads_pkey PRIMARY KEY (id, created_at)
  ) PARTITION BY RANGE (created_at);
  CREATE UNIQUE INDEX webhook_payloads_digest_key ON webhook_payloads (digest, created_at);
  CREATE INDEX webhook_payloads_created_idx ON webhook_payloads (created_at);

  CREATE TABLE webhook_deliveries (
    id uuid NOT NULL DEFAULT gen_random_uuid(),
    event_id text NOT NULL CONSTRAINT webhook_deliveries_event_id_check CHECK (event_id ~ '^evt_[0-9a-f]{32}$'),
    endpoint_id uuid NOT NULL CONSTRAINT webhook_deliveries_endpoint_id_fkey REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    user_id uuid NOT NULL CONSTRAINT webhook_deliveries_user_id_fkey REFERENCES users (id) ON DELETE CASCADE,
    source_event_id bigint,
    resent_from_id uuid,
    event_type text NOT NULL CONSTRAINT webhook_deliveries_event_type_check CHECK (event_type = ANY (ARRAY[${EVENT_KINDS}])),
    mode text NOT NULL CONSTRAINT webhook_deliveries_mode_check CHECK (mode IN ('concise', 'verbose')),
    event_created_at timestamptz NOT NULL,
    status text NOT NULL CONSTRAINT webhook_deliveries_status_check CHECK (status IN ('pending', 'retrying', 'succeeded', 'failed', 'cancelled')),
    attempt_count int NOT NULL DEFAULT 0 CONSTRAINT webhook_deliveries_attempt_count_check CHECK (attempt_count >= 0),
    last_status_code int,
    last_error text,
    last_attempt_at timestamptz,
    next_attempt_at timestamptz,
    created_at timestamptz(3) NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    payload_id bigint NOT NULL,
    line_id uuid,
    recovered_at timestamptz,
    lease_until timestamptz,
    trace_parent text,
    CONSTRAINT webhook_deliveries_pkey PRIMARY KEY (id, created_at)
  ) PARTITION BY RANGE (created_at);
  CREATE UNIQUE INDEX webhook_deliveries_event_id_key ON webhook_deliveries (event_id, created_at);
  CREATE UNIQUE INDEX webhook_deliveries_source_endpoint_key ON webhook_deliveries (source_event_id, endpoint_id, created_at)
    WHERE source_event_id IS NOT NULL AND resent_from_id IS NULL;
  CREATE INDEX webhook_deliveries_endpoint_page_idx ON webhook_deliveries (endpoint_id, created_at DESC, id DESC);
  CREATE INDEX webhook_deliveries_endpoint_status_idx ON webhook_deliveries (endpoint_id, status, created_at DESC, id DESC) WHERE status <> 'succeeded';
  CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE status IN ('pending', 'retrying');
  CREATE INDEX webhook_deliveries_payload_idx ON webhook_deliveries (payload_id);
  CREATE INDEX webhook_deliveries_finished_idx ON webhook_deliveries (created_at) WHERE status IN ('succeeded', 'failed', 'cancelled');
  CREATE INDEX webhook_deliveries_resent_from_idx ON webhook_deliveries (resent_from_id) WHERE resent_from_id IS NOT NULL;
  CREATE INDEX webhook_deliveries_recover_idx ON webhook_deliveries (endpoint_id, event_created_at, id) WHERE status = 'failed' AND recovered_at IS NULL;

  CREATE TABLE webhook_delivery_attempts (
    id uuid NOT NULL DEFAULT gen_random_uuid(),
    delivery_id uuid NOT NULL,
    attempt_number int NOT NULL CONSTRAINT webhook_delivery_attempts_attempt_number_check CHECK (attempt_number >= 1),
    attempted_at timestamptz NOT NULL,
    duration_ms int NOT NULL CONSTRAINT webhook_delivery_attempts_duration_ms_check CHECK (duration_ms >= 0),
    status_code int,
    error_kind text,
    response_body text CONSTRAINT webhook_delivery_attempts_response_body_check CHECK (octet_length(response_body) <= 2048),
    delivery_created_at timestamptz(3) NOT NULL DEFAULT '-infinity',
    CONSTRAINT webhook_delivery_attempts_pkey PRIMARY KEY (id, delivery_created_at),
    CONSTRAINT webhook_delivery_attempts_delivery_id_attempt_number_key UNIQUE (delivery_id, attempt_number, delivery_created_at)
  ) PARTITION BY RANGE (delivery_created_at);`;

/**
 * The functions of the layout (docs/delivery-log.md). A delivery's id is a UUIDv7 whose time is
 * its created_at (ms), and its event_id 'evt_' + that id's hex: both name the row's day. Ids made
 * before the migration (v4; random evt ids) are in the history partition.
 */
function functions(until: string): string {
  return `
  CREATE FUNCTION delivery_log_day(t timestamptz) RETURNS timestamptz LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN date_trunc('day', t AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
  CREATE FUNCTION delivery_log_history_until() RETURNS timestamptz LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN '${until}'::timestamptz;
  CREATE FUNCTION delivery_log_uuid7(t timestamptz) RETURNS uuid LANGUAGE sql VOLATILE PARALLEL SAFE
    BEGIN ATOMIC
      SELECT (lpad(to_hex(floor(extract(epoch FROM t) * 1000)::bigint), 12, '0') || '7' || substr(r, 1, 3)
              || substr('89ab', 1 + (get_byte(decode(substr(r, 4, 2), 'hex'), 0) % 4), 1) || substr(r, 6, 15))::uuid
        FROM (SELECT md5(random()::text || clock_timestamp()::text) AS r) AS x;
    END;
  -- The created_at a delivery id names (its UUIDv7 time), or null for an id from before the migration.
  CREATE FUNCTION delivery_log_created_at(id uuid) RETURNS timestamptz LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN substr(id::text, 15, 1) = '7'
                THEN to_timestamp(('x' || lpad(replace(substr(id::text, 1, 13), '-', ''), 16, '0'))::bit(64)::bigint / 1000.0) END;
  CREATE FUNCTION webhook_deliveries_ids() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      NEW.id := delivery_log_uuid7(NEW.created_at);
      NEW.event_id := 'evt_' || replace(NEW.id::text, '-', '');
      RETURN NEW;
    END $$;
  -- What the foreign key's ON DELETE CASCADE did: a delivery deleted by a row (its endpoint's or
  -- its owner's cascade, retention's batches) takes its attempts. A dropped day takes its own.
  CREATE FUNCTION webhook_deliveries_attempts_gone() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      DELETE FROM webhook_delivery_attempts
       WHERE delivery_id = OLD.id AND (delivery_created_at = OLD.created_at OR delivery_created_at < delivery_log_history_until());
      RETURN NULL;
    END $$;
  -- The day partitions of the three tables for the UTC days from_day..to_day (those after the
  -- history's bound): idempotent, and serialized by an advisory lock when several workers run it.
  CREATE FUNCTION delivery_log_create_partitions(from_day date, to_day date) RETURNS int LANGUAGE plpgsql AS $$
    DECLARE
      day date;
      tbl text;
      made int := 0;
    BEGIN
      PERFORM pg_advisory_xact_lock(727100046);
      FOR day IN SELECT generate_series(greatest(from_day, (delivery_log_history_until() AT TIME ZONE 'UTC')::date), to_day, interval '1 day')::date LOOP
        FOREACH tbl IN ARRAY ARRAY['webhook_payloads', 'webhook_deliveries', 'webhook_delivery_attempts'] LOOP
          IF to_regclass(format('%s_p%s', tbl, to_char(day, 'YYYYMMDD'))) IS NULL THEN
            -- Deliveries keep room for heap-only updates of their claims (migration DeliveryLease).
            EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)%s', format('%s_p%s', tbl, to_char(day, 'YYYYMMDD')), tbl,
                           (day::timestamp AT TIME ZONE 'UTC'), ((day + 1)::timestamp AT TIME ZONE 'UTC'),
                           CASE WHEN tbl = 'webhook_deliveries' THEN ' WITH (fillfactor = 80)' ELSE '' END);
            made := made + 1;
          END IF;
        END LOOP;
      END LOOP;
      RETURN made;
    END $$;`;
}
