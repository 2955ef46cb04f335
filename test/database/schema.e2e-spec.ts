import { DataSource, EntityMetadata, QueryRunner } from 'typeorm';
import { createTestApp, TestApp } from '../support/app';

/**
 * The entities describe the schema the migrations make (src/database/migrations, the source of
 * truth): every table has an entity, and TypeORM would change nothing to make this database
 * (migrated by the global setup) match them. TypeORM's own diff compares columns in full, but
 * check constraints, indexes, unique constraints and foreign keys only by name (and the last by
 * the table they reference and their ON DELETE): the third test compares what they are made of.
 * An index on an expression, which @Index cannot describe, is declared by name with
 * `synchronize: false`: only that the migrations made it is compared.
 */

/**
 * Indexes the migrations create with descending columns: @Index has no column direction, so
 * their entities list the columns in order and say which are DESC in a comment. Only for these
 * are the directions left out of the comparison (and they must have some).
 */
const DESCENDING_INDEXES = [
  'endpoint_cap_audit_org_idx', // (org_id, created_at DESC)
  'webhook_deliveries_endpoint_page_idx', // (endpoint_id, created_at DESC, id DESC)
  'webhook_deliveries_endpoint_status_idx', // (endpoint_id, status, created_at DESC, id DESC) WHERE status <> 'succeeded'
  'threads_line_recent_idx', // (line_id, last_message_at DESC, id DESC)
  'email_opens_message_idx', // (message_id, opened_at DESC)
  'agent_turns_thread_idx', // (thread_id, created_at DESC)
  'agent_turns_org_recent_idx', // (org_id, created_at DESC, id DESC)
  'agent_turns_credential_recent_idx', // (line_id, created_at DESC, id DESC) WHERE agent_id IS NULL
  'thread_labels_label_recent_idx', // (label_id, line_id, last_message_at DESC, thread_id DESC)
  'agent_turns_agent_recent_idx', // (agent_id, created_at DESC, id DESC)
  'agent_turns_awaiting_idx', // (agent_id, created_at DESC, id DESC) WHERE status = 'AWAITING_APPROVAL'
  'messages_org_recent_idx', // (org_id, created_at DESC)
];

/**
 * Check constraints a migration added NOT VALID to the delivery log, so as not to read every row of
 * it under its lock (a check added valid is verified against every row there). Each was added with
 * its column in the same statement, when every row held null, so every row satisfies it; PostgreSQL
 * checks each row written since. Only for these is NOT VALID left out of the comparison (an
 * operator may validate them).
 */
const NOT_VALID_CHECKS = [
  'webhook_deliveries_success_duration_ms_check', // migration SuccessOnDelivery
  'webhook_deliveries_success_response_body_check',
];

describe('schema: the entities and the migrations describe the same database', () => {
  let t: TestApp;
  let db: DataSource;
  beforeAll(async () => {
    t = await createTestApp();
    db = t.app.get(DataSource);
  });
  afterAll(async () => {
    await t.close();
  });

  it('every table the migrations create has an entity', async () => {
    const tables: Array<{ name: string }> = await db.query(
      // A partition (of the delivery log's days: migration DeliveryLogPartitions) is its parent's.
      `SELECT table_name AS name FROM information_schema.tables
        WHERE table_schema = 'public' AND table_type = 'BASE TABLE' AND table_name <> $1
          AND NOT (SELECT relispartition FROM pg_class WHERE oid = format('public.%I', table_name)::regclass)`,
      [db.options.migrationsTableName],
    );
    const entityTables = db.entityMetadatas.map((m) => m.tableName).sort();
    expect(entityTables).toEqual(tables.map((r) => r.name).sort());
  });

  it('TypeORM would change nothing to make the database match the entities', async () => {
    const sql = await withSerialQueries(db, () => db.driver.createSchemaBuilder().log());
    expect(sql.upQueries.map((q) => q.query)).toEqual([]);
  });

  it('check constraints, indexes, unique constraints and foreign keys are made of what the migrations made them of', async () => {
    const runner = db.createQueryRunner();
    await runner.connect();
    await runner.startTransaction();
    try {
      const differences: string[] = [];
      for (const metadata of db.entityMetadatas) differences.push(...(await compareDefinitions(runner, metadata)));
      for (const name of NOT_VALID_CHECKS) {
        if (!db.entityMetadatas.some((m) => m.checks.some((check) => check.name === name))) {
          differences.push(`${name}: listed in NOT_VALID_CHECKS but declared by no entity`);
        }
      }
      for (const name of DESCENDING_INDEXES) {
        if (!db.entityMetadatas.some((m) => m.indices.some((index) => index.name === name))) {
          differences.push(`${name}: listed in DESCENDING_INDEXES but declared by no entity`);
        }
      }
      expect(differences).toEqual([]);
    } finally {
      // The probe tables are temporary and made in this transaction: rolling it back drops them.
      await runner.rollbackTransaction();
      await runner.release();
    }
  });
});

/**
 * PostgreSQL writes each definition in its own normal form (pg_get_constraintdef, pg_get_indexdef):
 * the entity's checks, unique constraints and indexes are made on an empty temporary copy of the
 * table, so that both sides are in that form. Foreign keys cannot be made on a temporary table
 * (they would reference permanent tables): theirs is written out from the metadata.
 */
async function compareDefinitions(runner: QueryRunner, metadata: EntityMetadata): Promise<string[]> {
  const table = metadata.tableName;
  const probe = `schema_probe_${table}`;
  const columns = (names: string[]) => names.map((c) => `"${c}"`).join(', ');
  await runner.query(`CREATE TEMP TABLE "${probe}" (LIKE "${table}")`);
  for (const check of metadata.checks) {
    await runner.query(`ALTER TABLE "${probe}" ADD CONSTRAINT "${check.name}" CHECK (${check.expression})`);
  }
  for (const unique of metadata.uniques) {
    await runner.query(`ALTER TABLE "${probe}" ADD CONSTRAINT "${unique.name}" UNIQUE (${columns(unique.columns.map((c) => c.databaseName))})`);
  }
  for (const index of metadata.indices) {
    // An index on an expression (@Index(name, { synchronize: false })): the entity names it, the
    // migration alone says what it is made of; its queries' tests check the planner uses it.
    if (index.synchronize === false) continue;
    const where = index.where ? ` WHERE ${index.where}` : '';
    await runner.query(
      `CREATE ${index.isUnique ? 'UNIQUE ' : ''}INDEX "${index.name}" ON "${probe}" (${columns(index.columns.map((c) => c.databaseName))})${where}`,
    );
  }

  const migrated = await definitions(runner, `public."${table}"`);
  const declared = await definitions(runner, `pg_temp."${probe}"`);
  for (const index of metadata.indices.filter((i) => i.synchronize === false)) {
    declared.set(index.name, migrated.get(index.name) ?? `an index on an expression (synchronize: false)`);
  }
  for (const fk of metadata.foreignKeys) {
    const onDelete = fk.onDelete && fk.onDelete !== 'NO ACTION' ? ` ON DELETE ${fk.onDelete}` : '';
    const onUpdate = fk.onUpdate && fk.onUpdate !== 'NO ACTION' ? ` ON UPDATE ${fk.onUpdate}` : '';
    declared.set(
      fk.name,
      `FOREIGN KEY (${fk.columnNames.join(', ')}) REFERENCES ${fk.referencedTablePath}(${fk.referencedColumnNames.join(', ')})${onDelete}${onUpdate}`,
    );
  }

  const differences: string[] = [];
  for (const [name, entity] of declared) {
    let migration = migrated.get(name);
    if (migration !== undefined && DESCENDING_INDEXES.includes(name)) {
      if (!migration.includes(' DESC')) differences.push(`${table}.${name}: listed in DESCENDING_INDEXES but has no DESC column`);
      migration = migration.replaceAll(' DESC', '');
    }
    // Valid or not: an operator may have validated them since (ALTER TABLE ... VALIDATE CONSTRAINT).
    if (migration !== undefined && NOT_VALID_CHECKS.includes(name)) migration = migration.replace(/ NOT VALID$/, '');
    if (migration === undefined) differences.push(`${table}.${name}: declared by the entity, not made by the migrations`);
    else if (migration !== entity) differences.push(`${table}.${name}: the migrations made ${migration}; the entity declares ${entity}`);
  }
  for (const name of migrated.keys()) {
    if (!declared.has(name)) differences.push(`${table}.${name}: made by the migrations, not declared by the entity`);
  }
  return differences;
}

/** A table's check, unique and foreign key constraints and its other indexes (not the primary key), by name; a partitioned table's index is `ON ONLY` it. */
async function definitions(runner: QueryRunner, relation: string): Promise<Map<string, string>> {
  const rows: Array<{ name: string; definition: string }> = await runner.query(
    `SELECT conname AS name, pg_get_constraintdef(oid) AS definition
       FROM pg_constraint WHERE conrelid = $1::regclass AND contype IN ('c', 'u', 'f')
     UNION ALL
     SELECT c.relname, regexp_replace(pg_get_indexdef(i.indexrelid), ' ON (ONLY )?\\S+ USING ', ' ON <table> USING ')
       FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
      WHERE i.indrelid = $1::regclass AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)`,
    [relation],
  );
  return new Map(rows.map((r) => [r.name, r.definition]));
}

/**
 * TypeORM's schema builder reads the tables with parallel queries on one client, which pg 8
 * reports with a DeprecationWarning in the test's output; its query runner's queries are queued
 * one after another here instead. The answers are the same.
 */
async function withSerialQueries<T>(db: DataSource, work: () => Promise<T>): Promise<T> {
  const create = db.createQueryRunner;
  db.createQueryRunner = (...args) => {
    const runner = create.apply(db, args);
    const query = runner.query.bind(runner);
    let last: Promise<unknown> = Promise.resolve();
    runner.query = ((...queryArgs: Parameters<typeof query>) => {
      const next = last.then(() => query(...queryArgs));
      last = next.catch(() => undefined);
      return next;
    }) as typeof runner.query;
    return runner;
  };
  try {
    return await work();
  } finally {
    db.createQueryRunner = create;
  }
}
