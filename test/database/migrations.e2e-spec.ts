import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from '../../src/database/data-source-options';
import { runMigrations } from '../../src/database/migrate';
import { MIGRATIONS } from '../../src/database/migrations';
import { deliveryById } from '../../src/delivery/delivery-ids';
import { DeliveryLogPartitionsRepository } from '../../src/delivery/delivery-log-partitions.repository';
import { BASE_DATABASE_URL, databaseUrlFor } from '../support/test-env';

async function query<T>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows as T[];
  } finally {
    await client.end();
  }
}

describe('migrations under the advisory lock', () => {
  it('two concurrent runs on the test database both succeed; at most one of them applies anything', async () => {
    const url = process.env.DATABASE_URL!;
    // The global setup has migrated this database already, so normally both find nothing to do.
    const [a, b] = await Promise.all([runMigrations(url), runMigrations(url)]);
    expect([a, b].filter((applied) => applied.length === 0).length).toBeGreaterThanOrEqual(1);
    expect(await runMigrations(url)).toEqual([]);
    const applied = await query<{ name: string }>(url, 'SELECT name FROM schema_migrations ORDER BY id');
    expect(applied.map((r) => r.name)).toEqual(MIGRATIONS.map((m) => new m().name ?? m.name));
  });

  describe('on a fresh database', () => {
    const name = `mss_test_migrate_${randomBytes(4).toString('hex')}`;
    const url = databaseUrlFor(name);
    beforeAll(async () => {
      await query(BASE_DATABASE_URL, `CREATE DATABASE ${name}`);
    });
    afterAll(async () => {
      await query(BASE_DATABASE_URL, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    });

    it('three replicas starting together: one applies every migration once, the others find nothing to do', async () => {
      const results = await Promise.all([runMigrations(url), runMigrations(url), runMigrations(url)]);
      const names = MIGRATIONS.map((m) => new m().name ?? m.name);
      expect(names.length).toBeGreaterThan(0);
      expect(results.filter((r) => r.length > 0)).toEqual([names]);
      expect(results.filter((r) => r.length === 0)).toHaveLength(2);

      const applied = await query<{ name: string }>(url, 'SELECT name FROM schema_migrations ORDER BY id');
      expect(applied.map((r) => r.name)).toEqual(names);
      const tables = await query<{ table_name: string }>(url, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'");
      expect(tables.map((r) => r.table_name)).toEqual(
        expect.arrayContaining(['orgs', 'users', 'lines', 'line_memberships', 'api_keys', 'endpoint_cap_grants', 'endpoint_cap_audit']),
      );
      // Every run released the lock (pg_locks is cluster-wide: look at this database only).
      const locks = await query<{ count: number }>(
        url,
        "SELECT count(*)::int AS count FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
      );
      expect(locks[0].count).toBe(0);
    });
  });

  /**
   * A database with data written before a migration: the migration moves it, its down puts it
   * back, and up again gives the same result.
   */
  describe('data through up, down and up again', () => {
    const name = `mss_test_migrate_${randomBytes(4).toString('hex')}`;
    const url = databaseUrlFor(name);
    const names = MIGRATIONS.map((m) => new m().name ?? m.name);
    beforeAll(async () => {
      await query(BASE_DATABASE_URL, `CREATE DATABASE ${name}`);
    });
    afterAll(async () => {
      await query(BASE_DATABASE_URL, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    });

    async function withDataSource<T>(migrations: typeof MIGRATIONS, work: (ds: DataSource) => Promise<T>): Promise<T> {
      const ds = new DataSource({ ...dataSourceOptions(url), migrations, extra: { max: 2 } });
      await ds.initialize();
      try {
        return await work(ds);
      } finally {
        await ds.destroy();
      }
    }
    /** Applies the migrations before `migration`, leaving it and the later ones pending. */
    const upToBefore = (migration: string) => withDataSource(MIGRATIONS.slice(0, names.indexOf(migration)), (ds) => ds.runMigrations({ transaction: 'each' }));
    /** Reverts the latest migrations until `migration` is reverted too. */
    const downThrough = (migration: string) =>
      withDataSource(MIGRATIONS, async (ds) => {
        while ((await query<{ name: string }>(url, 'SELECT name FROM schema_migrations')).some((r) => r.name === migration)) {
          await ds.undoLastMigration({ transaction: 'each' });
        }
      });
    const columns = async (table: string) =>
      (await query<{ column_name: string }>(url, `SELECT column_name FROM information_schema.columns WHERE table_name = $1`, [table])).map(
        (r) => r.column_name,
      );

    it('WebhookPayloads: deliveries with the same data share one payload; down gives each delivery its data back', async () => {
      await upToBefore('WebhookPayloads1763800500000');
      const [{ id: orgId }] = await query<{ id: string }>(url, `INSERT INTO orgs (name, tier) VALUES ('o', 'PRO') RETURNING id`);
      const [{ id: userId }] = await query<{ id: string }>(
        url,
        `INSERT INTO users (org_id, email, display_name, role) VALUES ($1, 'u@example.com', 'U', 'OWNER') RETURNING id`,
        [orgId],
      );
      const [{ id: endpointId }] = await query<{ id: string }>(
        url,
        `INSERT INTO webhook_endpoints (user_id, org_id, url, events, mode, message_history_count, status, all_channels, secret_sealed)
         VALUES ($1, $2, 'https://hooks.example.com/x', '{message.received}', 'concise', 10, 'active', true, 'sealed') RETURNING id`,
        [userId, orgId],
      );
      const shared = '{"thread":{"id":"t1"},"note":"Grüße ☕"}';
      const alone = '{"thread":{"id":"t2"}}';
      const inserted = await query<{ id: string; data: object }>(
        url,
        `INSERT INTO webhook_deliveries (event_id, endpoint_id, user_id, event_type, mode, data, event_created_at, status, created_at)
         SELECT 'evt_' || md5(i::text), $1, $2, 'message.received', 'concise', (ARRAY[$3, $3, $4, $3])[i]::json, now(), 'succeeded',
                now() - i * interval '1 minute'
           FROM generate_series(1, 4) AS i
         RETURNING id, data`,
        [endpointId, userId, shared, alone],
      );
      await query(
        url,
        `INSERT INTO webhook_delivery_attempts (delivery_id, attempt_number, attempted_at, duration_ms, status_code)
                        SELECT id, 1, now(), 5, 200 FROM webhook_deliveries`,
      );

      await runMigrations(url);
      expect(await columns('webhook_deliveries')).not.toContain('data');
      const moved = await query<{ id: string; payload_id: string; data: object; payload_created_at: Date }>(
        url,
        `SELECT d.id, d.payload_id, p.data::text AS data, p.created_at AS payload_created_at
           FROM webhook_deliveries d JOIN webhook_payloads p ON p.id = d.payload_id ORDER BY d.created_at DESC`,
      );
      expect(moved.map((r) => r.data)).toEqual([shared, shared, alone, shared]);
      expect(new Set(moved.map((r) => r.payload_id)).size).toBe(2);
      expect((await query<{ n: number }>(url, 'SELECT count(*)::int AS n FROM webhook_payloads'))[0].n).toBe(2);
      // A payload is as old as the oldest delivery that uses it (what retention goes by).
      const [oldest] = await query<{ created_at: Date }>(url, `SELECT min(created_at) AS created_at FROM webhook_deliveries WHERE id = ANY($1::uuid[])`, [
        [inserted[0].id, inserted[1].id, inserted[3].id],
      ]);
      expect(moved[0].payload_created_at.getTime()).toBe(oldest.created_at.getTime());
      // The digest is the SHA-256 of the JSON text, as fan-out computes it.
      const digests = await query<{ ok: boolean }>(url, `SELECT digest = sha256(convert_to(data::text, 'UTF8')) AS ok FROM webhook_payloads`);
      expect(digests).toEqual([{ ok: true }, { ok: true }]);

      await downThrough('WebhookPayloads1763800500000');
      const tables = await query<{ table_name: string }>(url, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'");
      expect(tables.map((r) => r.table_name)).not.toContain('webhook_payloads');
      const back = await query<{ id: string; data: string }>(url, `SELECT id, data::text AS data FROM webhook_deliveries`);
      expect(Object.fromEntries(back.map((r) => [r.id, r.data]))).toEqual(Object.fromEntries(inserted.map((r) => [r.id, JSON.stringify(r.data)])));
      expect((await query<{ n: number }>(url, 'SELECT count(*)::int AS n FROM webhook_delivery_attempts'))[0].n).toBe(4);

      expect(await runMigrations(url)).toEqual(names.slice(names.indexOf('WebhookPayloads1763800500000')));
      expect((await query<{ n: number }>(url, 'SELECT count(DISTINCT payload_id)::int AS n FROM webhook_deliveries'))[0].n).toBe(2);
    });

    it('EmailOpenFetchCounts: counted opens stay rows; earlier fetches that were not opens fold into one row per message', async () => {
      await downThrough('EmailOpenFetchCounts1763800520000');
      const [{ id: orgId }] = await query<{ id: string }>(url, `INSERT INTO orgs (name, tier) VALUES ('p', 'PRO') RETURNING id`);
      const [{ id: lineId }] = await query<{ id: string }>(
        url,
        `INSERT INTO lines (org_id, type, address) VALUES ($1, 'EMAIL_ACCOUNT', 'us@example.com') RETURNING id`,
        [orgId],
      );
      const [{ id: identityId }] = await query<{ id: string }>(
        url,
        `INSERT INTO identities (org_id, kind, value) VALUES ($1, 'EMAIL', 'them@example.com') RETURNING id`,
        [orgId],
      );
      const [{ id: threadId }] = await query<{ id: string }>(
        url,
        `INSERT INTO threads (org_id, line_id, channel, partner_identity_id, last_message_at) VALUES ($1, $2, 'EMAIL', $3, now()) RETURNING id`,
        [orgId, lineId, identityId],
      );
      const [{ id: messageId }] = await query<{ id: string }>(
        url,
        `INSERT INTO messages (org_id, thread_id, line_id, channel, direction, status, body, from_value, from_kind, to_value, to_kind, read_receipt)
         VALUES ($1, $2, $3, 'EMAIL', 'OUTBOUND', 'SENT', 'hi', 'us@example.com', 'EMAIL', 'them@example.com', 'EMAIL', true) RETURNING id`,
        [orgId, threadId, lineId],
      );
      await query(
        url,
        `INSERT INTO email_opens (message_id, opened_at, user_agent, counted)
         SELECT $1, '2026-01-01T00:00:00Z'::timestamptz + i * interval '1 second', 'ua-' || i, i IN (2, 6) FROM generate_series(1, 7) AS i`,
        [messageId],
      );

      await runMigrations(url);
      const rows = await query<{ opened_at: Date; last_fetched_at: Date; counted: boolean; reason: string | null; fetch_count: number; user_agent: string }>(
        url,
        `SELECT opened_at, last_fetched_at, counted, reason, fetch_count, user_agent FROM email_opens WHERE message_id = $1 ORDER BY opened_at`,
        [messageId],
      );
      const at = (second: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, second));
      expect(rows).toEqual([
        { opened_at: at(1), last_fetched_at: at(7), counted: false, reason: 'unrecorded', fetch_count: 5, user_agent: 'ua-1' },
        { opened_at: at(2), last_fetched_at: at(2), counted: true, reason: null, fetch_count: 1, user_agent: 'ua-2' },
        { opened_at: at(6), last_fetched_at: at(6), counted: true, reason: null, fetch_count: 1, user_agent: 'ua-6' },
      ]);

      await downThrough('EmailOpenFetchCounts1763800520000');
      expect(await columns('email_opens')).not.toContain('fetch_count');
      expect((await query<{ n: number }>(url, 'SELECT count(*)::int AS n FROM email_opens WHERE message_id = $1', [messageId]))[0].n).toBe(3);
      await runMigrations(url);
    });

    it('AttachmentQuota: usage is backfilled per org; deleting attachments gives their bytes back', async () => {
      await downThrough('AttachmentQuota1763800530000');
      const [{ id: messageId, org_id: orgId }] = await query<{ id: string; org_id: string }>(url, `SELECT id, org_id FROM messages LIMIT 1`);
      const inserted = await query<{ id: string }>(
        url,
        `INSERT INTO attachments (org_id, message_id, filename, mime_type, size_bytes, content)
         SELECT $1, $2, 'f' || n, 'text/plain', n, convert_to(repeat('x', n), 'UTF8') FROM unnest(ARRAY[100, 50]) AS n RETURNING id`,
        [orgId, messageId],
      );
      await runMigrations(url);
      const usage = async () =>
        (await query<{ used: string }>(url, 'SELECT bytes_used AS used FROM org_attachment_storage WHERE org_id = $1', [orgId]))[0]?.used;
      expect(await usage()).toBe('150');
      await query(url, 'DELETE FROM attachments WHERE id = $1', [inserted[0].id]);
      expect(await usage()).toBe('50');

      await downThrough('AttachmentQuota1763800530000');
      expect(await columns('attachments')).not.toContain('content_status');
      await runMigrations(url);
      expect(await usage()).toBe('50');
    });

    it('DeliveryLine: a delivery takes the line of its outbox event while that is kept; others stay null', async () => {
      await downThrough('DeliveryLine1763800540000');
      const [endpoint] = await query<{ id: string; user_id: string; org_id: string }>(url, 'SELECT id, user_id, org_id FROM webhook_endpoints LIMIT 1');
      const [{ id: lineId }] = await query<{ id: string }>(
        url,
        `INSERT INTO lines (org_id, type, address) VALUES ($1, 'PHONE_NUMBER', '+15550009999') RETURNING id`,
        [endpoint.org_id],
      );
      const events = await query<{ id: string }>(
        url,
        `INSERT INTO outbox_events (type, org_id, line_id, data) VALUES ('message.received', $1, $2, '{}'), ('contact.merged', $1, NULL, '{}') RETURNING id`,
        [endpoint.org_id, lineId],
      );
      const [{ payload_id: payloadId }] = await query<{ payload_id: string }>(url, 'SELECT payload_id FROM webhook_deliveries LIMIT 1');
      // Of a line event, of an org-wide event, and one whose outbox event is gone (pruned).
      const deliveries = await query<{ id: string }>(
        url,
        `INSERT INTO webhook_deliveries (event_id, endpoint_id, user_id, source_event_id, event_type, mode, payload_id, event_created_at, status)
         SELECT 'evt_' || md5(random()::text), $1, $2, s, 'message.received', 'concise', $3, now(), 'succeeded' FROM unnest($4::bigint[]) AS s
         RETURNING id`,
        [endpoint.id, endpoint.user_id, payloadId, [events[0].id, events[1].id, '999999999']],
      );
      await runMigrations(url);
      const lineOf = async (id: string) =>
        (await query<{ line_id: string | null }>(url, 'SELECT line_id FROM webhook_deliveries WHERE id = $1', [id]))[0].line_id;
      expect([await lineOf(deliveries[0].id), await lineOf(deliveries[1].id), await lineOf(deliveries[2].id)]).toEqual([lineId, null, null]);
      await downThrough('DeliveryLine1763800540000');
      expect(await columns('webhook_deliveries')).not.toContain('line_id');
      await runMigrations(url);
      expect(await lineOf(deliveries[0].id)).toBe(lineId);
    });

    it('OAuthGrantScopes: a grant made before takes its permissions as the scope it asked for; no grant may then hold more than its scope', async () => {
      await downThrough('OAuthGrantScopes1763800720000');
      const [{ id: userId }] = await query<{ id: string }>(url, 'SELECT id FROM users LIMIT 1');
      await query(
        url,
        `INSERT INTO oauth_clients (client_id, client_name, redirect_uris, metadata) VALUES ('migrated-client', 'M', '{http://127.0.0.1:9/callback}', '{}')`,
      );
      const grantId = '00000000-0000-8000-8000-000000000001';
      await query(
        url,
        `INSERT INTO oauth_grants (id, user_id, client_id, resource, channel_access_mode, permissions)
         VALUES ($1, $2, 'migrated-client', 'http://127.0.0.1:3000/api/mcp', 'ALL', '{read,send}')`,
        [grantId, userId],
      );
      await runMigrations(url);
      const scopeOf = async () =>
        (await query<{ scope: string[] }>(url, 'SELECT requested_scopes AS scope FROM oauth_grants WHERE id = $1', [grantId]))[0].scope;
      expect(await scopeOf()).toEqual(['read', 'send']);
      await query(url, `UPDATE oauth_grants SET permissions = '{read}' WHERE id = $1`, [grantId]);
      await expect(query(url, `UPDATE oauth_grants SET permissions = '{read,webhooks}' WHERE id = $1`, [grantId])).rejects.toThrow(
        /oauth_grants_requested_scopes_check/,
      );

      await downThrough('OAuthGrantScopes1763800720000');
      expect(await columns('oauth_grants')).not.toContain('requested_scopes');
      await runMigrations(url);
      expect(await scopeOf()).toEqual(['read']);
    });

    it('DeliveryLogPartitions: the log becomes partitions by day with every row kept and found by id; down gives the plain tables back', async () => {
      const migration = 'DeliveryLogPartitions1763801000000';
      await downThrough(migration);
      const kind = async (table: string) => (await query<{ relkind: string }>(url, 'SELECT relkind FROM pg_class WHERE relname = $1', [table]))[0].relkind;
      expect(await kind('webhook_deliveries')).toBe('r');
      const [endpoint] = await query<{ id: string; user_id: string }>(url, 'SELECT id, user_id FROM webhook_endpoints LIMIT 1');
      const [{ id: payloadId }] = await query<{ id: string }>(
        url,
        `INSERT INTO webhook_payloads (digest, data) VALUES (sha256(convert_to(random()::text, 'UTF8')), '{"before":true}') RETURNING id`,
      );
      const old = await query<{ id: string; event_id: string }>(
        url,
        `INSERT INTO webhook_deliveries (event_id, endpoint_id, user_id, event_type, mode, payload_id, event_created_at, status, created_at)
         SELECT 'evt_' || md5(random()::text), $1, $2, 'message.received', 'concise', $3, now(), 'succeeded', now() - i * interval '1 day'
           FROM generate_series(0, 2) AS i RETURNING id, event_id`,
        [endpoint.id, endpoint.user_id, payloadId],
      );
      await query(
        url,
        `INSERT INTO webhook_delivery_attempts (delivery_id, attempt_number, attempted_at, duration_ms, status_code) SELECT id, 1, now(), 5, 200 FROM webhook_deliveries WHERE payload_id = $1`,
        [payloadId],
      );
      const fingerprint = async () => {
        const rows = await query<{ n: number; sum: string }>(
          url,
          `SELECT count(*)::int AS n, md5(string_agg(id::text, ',' ORDER BY id)) AS sum FROM webhook_deliveries
           UNION ALL SELECT count(*)::int, md5(string_agg(id::text, ',' ORDER BY id)) FROM webhook_delivery_attempts
           UNION ALL SELECT count(*)::int, md5(string_agg(id::text, ',' ORDER BY id)) FROM webhook_payloads`,
        );
        return rows;
      };
      const before = await fingerprint();

      await runMigrations(url);
      expect(await kind('webhook_deliveries')).toBe('p');
      expect(await kind('webhook_deliveries_history')).toBe('r');
      expect(await fingerprint()).toEqual(before);
      for (const row of old) {
        const found = await query<{ event_id: string }>(url, `SELECT d.event_id FROM webhook_deliveries d WHERE ${deliveryById('d', '$1::uuid')}`, [row.id]);
        expect(found).toEqual([{ event_id: row.event_id }]);
      }
      // A delivery made now: a UUIDv7 id, found by id too.
      const [fresh] = await query<{ id: string }>(
        url,
        `INSERT INTO webhook_deliveries (event_id, endpoint_id, user_id, event_type, mode, payload_id, event_created_at, status)
         VALUES ('evt_' || md5(random()::text), $1, $2, 'message.received', 'concise', $3, now(), 'pending') RETURNING id`,
        [endpoint.id, endpoint.user_id, payloadId],
      );
      expect(fresh.id[14]).toBe('7');
      expect(await query(url, `SELECT 1 AS found FROM webhook_deliveries d WHERE ${deliveryById('d', '$1::uuid')}`, [fresh.id])).toEqual([{ found: 1 }]);

      await downThrough(migration);
      expect(await kind('webhook_deliveries')).toBe('r');
      expect((await query<{ n: number }>(url, 'SELECT count(*)::int AS n FROM webhook_deliveries WHERE id = $1', [fresh.id]))[0].n).toBe(1);
      await runMigrations(url);
      expect(await kind('webhook_deliveries')).toBe('p');
    });

    it("PayloadIdSequence: payload ids go on through up, down and up again, and retention can drop the history's payloads with the rest of it", async () => {
      const migration = 'PayloadIdSequence1763801180000';
      // Dated after the history's bound: once the history is dropped, only the days hold rows.
      const payload = async () =>
        Number(
          (
            await query<{ id: string }>(
              url,
              `INSERT INTO webhook_payloads (digest, data, created_at)
               VALUES (sha256(convert_to(random()::text, 'UTF8')), '{}', delivery_log_history_until() + interval '1 hour') RETURNING id`,
            )
          )[0].id,
        );
      const ids = [await payload()];
      await downThrough(migration);
      ids.push(await payload());
      await runMigrations(url);
      ids.push(await payload());
      await withDataSource(MIGRATIONS, (ds) => new DeliveryLogPartitionsRepository(ds).drop('history'));
      const left = await query<{ relname: string }>(url, `SELECT relname FROM pg_class WHERE relname LIKE 'webhook\\_%\\_history'`);
      expect(left).toEqual([]);
      ids.push(await payload());
      expect([...ids].sort((a, b) => a - b)).toEqual(ids);
      expect(new Set(ids).size).toBe(4);
    });
  });
});
