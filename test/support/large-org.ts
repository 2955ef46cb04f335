import { createHash } from 'node:crypto';

/**
 * An org the size of a business inbox after a year, written with SQL (not through ingest: that is
 * scenario 7's subject), for the tests that check the read statements' plans and for the
 * benchmark that times the reads (bench scenario 8). The org, its lines, user and webhook
 * endpoint are made through the service first; this fills everything that grows.
 *
 * Thread n (0 is the newest) is on line n mod lines, with partner n; message k of thread n is the
 * (k·threads + n)-th message, so the numbered words below spread evenly over threads and time.
 * Ids are derived from the org and the numbers (md5 → uuid), so one statement can refer to the
 * rows another made without reading them back.
 */

/** Anything with pg's query(text, values): a pg Client or Pool, or a TypeORM DataSource. */
export interface Queryable {
  query(text: string, values?: unknown[]): Promise<unknown>;
}

/** The rows of a query's answer: a DataSource answers them, a pg Client a result holding them. */
function rowsOf(answer: unknown): unknown[] {
  return Array.isArray(answer) ? answer : (answer as { rows: unknown[] }).rows;
}

export interface LargeOrgLine {
  id: string;
  type: 'PHONE_NUMBER' | 'EMAIL_ACCOUNT';
  address: string;
}

export interface LargeOrgSpec {
  orgId: string;
  lines: LargeOrgLine[];
  threads: number;
  messagesPerThread: number;
  /** Every fifth thread gets an agent turn (one agent per line); decided turns name this user. */
  userId: string;
  /**
   * Webhook deliveries of message.received to write for this endpoint of the user (one per
   * message, up to `deliveries`); every `failedEvery`th failed (none by default). With
   * `inDayPartitions`, they are dated over the days after the history partition's bound (the
   * day partitions a fresh database has) instead of at their messages' times (all in the history).
   */
  endpoint?: { id: string; deliveries: number; failedEvery?: number; inDayPartitions?: boolean };
}

/**
 * The labels the fill puts on threads, and on which share of them: common on every fifth thread,
 * some on one in twenty, rare on one in a thousand.
 */
export const LARGE_ORG_LABELS = { common: 'vip', some: 'billing', rare: 'legal' } as const;

/**
 * The words messages are made of, besides everyday ones: c0..c9 are each in 10 % of the
 * messages, m0..m999 in 0.1 %, r0..r99999 in one in 100,000 (ten of a million).
 */
export const LARGE_ORG_WORDS = {
  tenPercent: (i: number) => `c${i % 10}`,
  perMille: (i: number) => `m${i % 1000}`,
  rare: (i: number) => `r${i % 100000}`,
} as const;

/** The uuid the fill gives row `n` of `kind` in the org (the same expression as the SQL's). */
export function largeOrgId(orgId: string, kind: 'thread' | 'identity' | 'contact' | 'message', n: number): string {
  // Mirrors `md5(org || ':' || kind || ':' || n)::uuid`.
  const hex = createHash('md5').update(`${orgId}:${kind}:${n}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const id = (kind: string, n: string) => `md5($1::uuid::text || ':${kind}:' || ${n})::uuid`;

/**
 * Fills the org; answers how long it took. Runs ANALYZE on the tables it wrote, and only those: on
 * a server without autovacuum (this machine's CI configuration), statistics taken of a table while
 * another run's rows were gone stay until someone analyzes it again, and a webhook_deliveries
 * believed empty had the delivery claim hash every waiting delivery (bench scenarios 4 to 6 ran at
 * a tenth of their rate after scenario 3's fill analyzed it).
 */
export async function fillLargeOrg(db: Queryable, spec: LargeOrgSpec): Promise<{ seconds: number }> {
  const started = Date.now();
  const { orgId, threads, messagesPerThread } = spec;
  const lineIds = spec.lines.map((l) => l.id);
  const lineTypes = spec.lines.map((l) => l.type);
  const lineAddresses = spec.lines.map((l) => l.address);
  // One row per thread: its line, channel, partner and when its last message came (thread 0 now,
  // the oldest a year ago).
  await db.query(
    `CREATE TEMP TABLE large_org_threads AS
     SELECT n, ${id('thread', 'n')} AS id, ${id('identity', 'n')} AS identity_id,
            (:lines)[1 + n % cardinality(:lines)] AS line_id,
            (:addresses)[1 + n % cardinality(:lines)] AS line_address,
            CASE WHEN (:types)[1 + n % cardinality(:lines)] = 'EMAIL_ACCOUNT' THEN 'EMAIL' ELSE 'SMS' END AS channel,
            CASE WHEN (:types)[1 + n % cardinality(:lines)] = 'EMAIL_ACCOUNT' THEN 'p' || n || '@partner.example' ELSE '+1777' || lpad(n::text, 7, '0') END AS partner,
            now() - n * (interval '365 days' / $2) AS last_at
       FROM generate_series(0, $2 - 1) n`
      .replaceAll(':lines', '$3::uuid[]')
      .replaceAll(':addresses', '$4::text[]')
      .replaceAll(':types', '$5::text[]'),
    [orgId, threads, lineIds, lineAddresses, lineTypes],
  );
  // Contacts: one for every other partner; every fourth also holds the next partner (merged).
  await db.query(
    `INSERT INTO contacts (id, org_id, display_name, notes)
     SELECT ${id('contact', 'n')}, $1, 'Contact ' || n, CASE WHEN n % 4 = 0 THEN 'merged from two identities' END
       FROM large_org_threads WHERE n % 2 = 0`,
    [orgId],
  );
  await db.query(
    `INSERT INTO identities (id, org_id, kind, value, display_name, contact_id)
     SELECT identity_id, $1, CASE channel WHEN 'EMAIL' THEN 'EMAIL' ELSE 'PHONE' END, partner, 'Partner ' || n,
            CASE WHEN n % 2 = 0 THEN ${id('contact', 'n')} WHEN n % 4 = 1 THEN ${id('contact', '(n - 1)')} END
       FROM large_org_threads`,
    [orgId],
  );
  await db.query(
    `INSERT INTO threads (id, org_id, line_id, channel, partner_identity_id, subject, last_message_at, message_count, created_at)
     SELECT id, $1, line_id, channel, identity_id, CASE channel WHEN 'EMAIL' THEN 'Order ' || n END, last_at, $2, last_at - ($2 - 1) * interval '1 hour'
       FROM large_org_threads`,
    [orgId, messagesPerThread],
  );
  // Message k of thread n, k = messagesPerThread - 1 the last: inbound and outbound in turn, an
  // hour apart, its words numbered by g = k·threads + n.
  await db.query(
    `INSERT INTO messages (id, org_id, thread_id, line_id, channel, direction, status, body, subject,
                           from_value, from_kind, to_value, to_kind, created_at, sent_at)
     SELECT ${id('message', 'g')}, $1, t.id, t.line_id, t.channel,
            CASE WHEN k % 2 = 0 THEN 'INBOUND' ELSE 'OUTBOUND' END,
            CASE WHEN k % 2 = 0 THEN 'RECEIVED' ELSE 'DELIVERED' END,
            format('%s order %s m%s c%s r%s %s %s', w[1 + g % 29], g, g % 1000, g % 10, g % 100000, w[1 + (g / 7) % 29], w[1 + (g / 13) % 29])
              || repeat(' ' || w[1 + (g / 3) % 29], (g % 5)::int),
            CASE t.channel WHEN 'EMAIL' THEN 'Order ' || t.n END,
            CASE WHEN k % 2 = 0 THEN t.partner ELSE t.line_address END, CASE t.channel WHEN 'EMAIL' THEN 'EMAIL' ELSE 'PHONE' END,
            CASE WHEN k % 2 = 0 THEN t.line_address ELSE t.partner END, CASE t.channel WHEN 'EMAIL' THEN 'EMAIL' ELSE 'PHONE' END,
            t.last_at - ($3 - 1 - k) * interval '1 hour', t.last_at - ($3 - 1 - k) * interval '1 hour'
       FROM generate_series(0, $3 - 1) k
      CROSS JOIN large_org_threads t
      CROSS JOIN LATERAL (SELECT k::bigint * $2 + t.n AS g) x
      CROSS JOIN (SELECT ARRAY['hello', 'thanks', 'delivery', 'invoice', 'tomorrow', 'meeting', 'price', 'please', 'call', 'back',
                               'shipped', 'payment', 'receipt', 'question', 'address', 'change', 'cancel', 'confirm', 'today', 'week',
                               'bonjour', 'merci', 'danke', 'gracias', 'livraison', 'rechnung', 'factura', 'pedido', 'paquete'] AS w) words`,
    [orgId, threads, messagesPerThread],
  );
  await db.query(`INSERT INTO labels (org_id, name) SELECT $1, unnest($2::text[]) ON CONFLICT (org_id, name) DO NOTHING`, [
    orgId,
    [LARGE_ORG_LABELS.common, LARGE_ORG_LABELS.some, LARGE_ORG_LABELS.rare],
  ]);
  await db.query(
    `INSERT INTO thread_labels (thread_id, label_id, confidence)
     SELECT t.id, l.id, 1 FROM large_org_threads t JOIN labels l ON l.org_id = $1
      WHERE (l.name = $2 AND t.n % 5 = 0) OR (l.name = $3 AND t.n % 20 = 3) OR (l.name = $4 AND t.n % 1000 = 7)`,
    [orgId, LARGE_ORG_LABELS.common, LARGE_ORG_LABELS.some, LARGE_ORG_LABELS.rare],
  );
  // One DRAFT agent per line; a turn on every fifth thread, as old as its last message.
  await db.query(`INSERT INTO agents (org_id, line_id, name, mode) SELECT $1, unnest($2::uuid[]), 'Large org agent', 'DRAFT'`, [orgId, lineIds]);
  await db.query(
    `INSERT INTO agent_turns (org_id, agent_id, thread_id, status, body, decided_by, decided_at, created_at)
     SELECT $1, a.id, t.id, CASE WHEN t.n % 3 = 0 THEN 'AWAITING_APPROVAL' WHEN t.n % 3 = 1 THEN 'SENT' ELSE 'REJECTED' END,
            'Draft answer to thread ' || t.n, CASE WHEN t.n % 3 <> 0 THEN $2::uuid END, CASE WHEN t.n % 3 <> 0 THEN t.last_at END, t.last_at
       FROM large_org_threads t JOIN agents a ON a.line_id = t.line_id AND a.org_id = $1
      WHERE t.n % 5 = 0`,
    [orgId, spec.userId],
  );
  if (spec.endpoint) {
    // Deliveries of message.received to the endpoint, one per message from the newest, succeeded
    // but every failedEvery-th (a 500), sharing one stored payload.
    await db.query(
      `WITH payload AS (
         INSERT INTO webhook_payloads (digest, data, created_at) VALUES (sha256(convert_to($1::text || ':large-org', 'UTF8')), '{"type":"message.received"}', delivery_log_day(now()))
         ON CONFLICT (digest, created_at) DO UPDATE SET digest = EXCLUDED.digest RETURNING id)
       INSERT INTO webhook_deliveries (event_id, endpoint_id, user_id, event_type, mode, event_created_at, status, attempt_count,
                                       last_status_code, last_attempt_at, created_at, updated_at, payload_id, line_id)
       SELECT 'evt_' || md5($1::uuid::text || ':delivery:' || d), $2, $3, 'message.received', 'concise', t.last_at,
              CASE WHEN d % $6 = $6 - 1 THEN 'failed' ELSE 'succeeded' END, 1,
              CASE WHEN d % $6 = $6 - 1 THEN 500 ELSE 200 END, t.last_at, at.created_at, at.created_at, payload.id, t.line_id
         FROM generate_series(0, $4 - 1) d
         JOIN large_org_threads t ON t.n = d % $5
        CROSS JOIN LATERAL (SELECT CASE WHEN $7::boolean THEN delivery_log_history_until() + make_interval(secs => d * 400000.0 / $4) ELSE t.last_at END
                              AS created_at) AS at
        CROSS JOIN payload`,
      [
        orgId,
        spec.endpoint.id,
        spec.userId,
        spec.endpoint.deliveries,
        threads,
        spec.endpoint.failedEvery ?? 2 ** 31 - 1,
        spec.endpoint.inDayPartitions ?? false,
      ],
    );
  }
  await db.query(`DROP TABLE large_org_threads`);
  const written = ['contacts', 'identities', 'threads', 'messages', 'labels', 'thread_labels', 'agents', 'agent_turns'];
  if (spec.endpoint) written.push('webhook_payloads', 'webhook_deliveries');
  for (const table of written) await db.query(`ANALYZE ${table}`);
  return { seconds: (Date.now() - started) / 1000 };
}

/**
 * `orgs` small orgs beside the one under test, as a shared database has: each with a line, a
 * user, `threads` threads carrying labels of its own, and an endpoint with a delivery per thread.
 * The planner then sees the many labels, lines and endpoints
 * a real database has (in its statistics), not only the large org's few. The endpoints' secrets
 * are placeholders no key opens, so a service started on the database refuses to start while
 * they are there: the caller deletes the orgs when done (`DELETE FROM orgs WHERE name = 'Other org'`).
 */
export async function fillOtherOrgs(db: Queryable, orgs: number, threads: number): Promise<void> {
  for (let i = 0; i < orgs; i += 1) {
    const [org] = rowsOf(await db.query(`INSERT INTO orgs (name, tier) VALUES ('Other org', 'PRO') RETURNING id`)) as Array<{ id: string }>;
    const [user] = rowsOf(
      await db.query(`INSERT INTO users (org_id, email, display_name, role) VALUES ($1, $2, 'Other', 'OWNER') RETURNING id`, [
        org.id,
        `other.${org.id}@example.com`,
      ]),
    ) as Array<{ id: string }>;
    const address = `+1999${String(Math.floor(Math.random() * 1e7)).padStart(7, '0')}${String(i % 1000).padStart(3, '0')}`;
    const [line] = rowsOf(
      await db.query(`INSERT INTO lines (org_id, type, address) VALUES ($1, 'PHONE_NUMBER', $2) RETURNING id, address`, [org.id, address]),
    ) as Array<{
      id: string;
      address: string;
    }>;
    // An endpoint taking every message, as a shared database's deliveries come from many endpoints,
    // a share of them failed (as other tests leave, and a receiver that was down does).
    const [endpoint] = rowsOf(
      await db.query(
        `INSERT INTO webhook_endpoints (user_id, org_id, url, events, mode, message_history_count, status, all_channels, secret_sealed)
       VALUES ($1, $2, 'https://hooks.example.com/other', ARRAY['message.received'], 'concise', 0, 'active', true, 'sealed') RETURNING id`,
        [user.id, org.id],
      ),
    ) as Array<{ id: string }>;
    await fillLargeOrg(db, {
      orgId: org.id,
      lines: [{ id: line.id, address: line.address, type: 'PHONE_NUMBER' }],
      threads,
      messagesPerThread: 1,
      userId: user.id,
      endpoint: { id: endpoint.id, deliveries: threads, failedEvery: 4 },
    });
  }
}
