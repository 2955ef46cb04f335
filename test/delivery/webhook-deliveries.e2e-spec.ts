import { randomUUID } from 'node:crypto';
import { storePayload } from '../support/payloads';
import { createSession, Session } from '../support/session';
import { createMcpTestApp, hookUrl, ISO_MS, McpTestApp, toolError, toolOk, UUID } from '../support/mcp';

interface Delivery {
  id: string;
  eventId: string;
  endpointId: string;
  eventType: string;
  status: string;
  attempts: number;
  lastStatusCode: number | null;
  lastError: string | null;
  lastAttemptAt: string | null;
  lastDurationMs: number | null;
  nextAttemptAt: string | null;
  resentFromId: string | null;
  createdAt: string;
}

interface Page {
  deliveries: Delivery[];
  nextCursor: string | null;
}

const EVT = /^evt_[0-9a-f]{32}$/;

describe('list_webhook_deliveries and resend_webhook_delivery', () => {
  let t: McpTestApp;
  let s: Session;
  beforeAll(async () => {
    t = await createMcpTestApp();
    s = await createSession(t.admin, { tier: 'POWER' });
  });
  afterAll(async () => {
    await t.close();
  });

  async function newEndpoint(): Promise<string> {
    const { endpoint } = await toolOk(t, s.apiKey, 'register_webhook', { url: hookUrl(), events: ['message.received'] });
    return endpoint.id;
  }

  /**
   * Inserts `count` delivery rows, three per created_at instant (so the id breaks ties), the
   * first `count / 3` instants one second apart going back from `newest`.
   */
  async function insertRows(endpointId: string, count: number, newest: string, label = 'row'): Promise<void> {
    await t.db.query(
      `INSERT INTO webhook_deliveries (event_id, endpoint_id, user_id, event_type, mode, payload_id, event_created_at, status, created_at)
       SELECT 'evt_' || md5($4 || i::text || random()::text), $1, $2, 'message.received', 'concise', $6, now(), 'succeeded',
              $3::timestamptz - ((i / 3) * interval '1 second')
         FROM generate_series(0, $5 - 1) AS i`,
      [endpointId, s.userId, newest, label, count, await storePayload(t.db, { label })],
    );
  }

  /** The ids of an endpoint's deliveries in the order the spec asks for, computed here, not in SQL. */
  async function expectedOrder(endpointId: string): Promise<string[]> {
    const rows: Array<{ id: string; created_at: Date }> = await t.db.query('SELECT id, created_at FROM webhook_deliveries WHERE endpoint_id = $1', [
      endpointId,
    ]);
    return rows.sort((a, b) => b.created_at.getTime() - a.created_at.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)).map((row) => row.id);
  }

  const payloadCount = async (): Promise<number> => (await t.db.query('SELECT count(*)::int AS n FROM webhook_payloads'))[0].n;

  const list = (endpointId: string, cursor?: string) =>
    toolOk<Page>(t, s.apiKey, 'list_webhook_deliveries', cursor === undefined ? { endpointId } : { endpointId, cursor });

  it('an endpoint without deliveries lists an empty page', async () => {
    expect(await list(await newEndpoint())).toEqual({ deliveries: [], nextCursor: null });
  });

  it('shows each delivery with its fields', async () => {
    const endpointId = await newEndpoint();
    const [row] = await t.db.query(
      `INSERT INTO webhook_deliveries (event_id, endpoint_id, user_id, event_type, mode, payload_id, event_created_at, status,
         attempt_count, last_status_code, last_error, last_attempt_at, next_attempt_at, created_at)
       VALUES ($1, $2, $3, 'thread.created', 'verbose', $4, now(), 'retrying', 2, 503, 'HTTP 503',
               '2026-03-01T10:00:00.250Z', '2026-03-01T10:05:00.250Z', '2026-03-01T09:59:59.999Z')
       RETURNING id`,
      [`evt_${'ab'.repeat(16)}`, endpointId, s.userId, await storePayload(t.db, { thread: { id: 't' } })],
    );
    // Two attempts, the later one shorter: the log shows the last attempt's duration.
    await t.db.query(
      `INSERT INTO webhook_delivery_attempts (delivery_id, attempt_number, attempted_at, duration_ms, status_code)
       VALUES ($1, 1, '2026-03-01T09:59:59.999Z', 1200, 503), ($1, 2, '2026-03-01T10:00:00.250Z', 87, 503)`,
      [row.id],
    );
    expect(await list(endpointId)).toEqual({
      deliveries: [
        {
          id: row.id,
          // The id is a UUIDv7 of created_at and the evt_ id its hex, whatever the INSERT gave (delivery-ids.ts).
          eventId: `evt_${row.id.replace(/-/g, '')}`,
          endpointId,
          eventType: 'thread.created',
          status: 'retrying',
          attempts: 2,
          lastStatusCode: 503,
          lastError: 'HTTP 503',
          lastAttemptAt: '2026-03-01T10:00:00.250Z',
          lastDurationMs: 87,
          nextAttemptAt: '2026-03-01T10:05:00.250Z',
          resentFromId: null,
          createdAt: '2026-03-01T09:59:59.999Z',
        },
      ],
      nextCursor: null,
    });
  });

  it('25 rows are one page; 26 are two', async () => {
    const exactly = await newEndpoint();
    await insertRows(exactly, 25, '2026-02-01T12:00:00.500Z');
    const one = await list(exactly);
    expect(one.deliveries).toHaveLength(25);
    expect(one.nextCursor).toBeNull();

    const over = await newEndpoint();
    await insertRows(over, 26, '2026-02-01T12:00:00.500Z');
    const first = await list(over);
    expect(first.deliveries).toHaveLength(25);
    expect(first.nextCursor).toEqual(expect.any(String));
    const second = await list(over, first.nextCursor!);
    expect(second.deliveries.map((d) => d.id)).toEqual((await expectedOrder(over)).slice(25));
    expect(second.nextCursor).toBeNull();
  });

  describe('60 rows', () => {
    let endpointId: string;
    let order: string[];
    beforeAll(async () => {
      endpointId = await newEndpoint();
      await insertRows(endpointId, 60, '2026-01-15T08:30:00.123Z');
      // Another endpoint's rows, interleaved in time, never show up.
      const other = await newEndpoint();
      await insertRows(other, 30, '2026-01-15T08:30:00.623Z', 'other');
      order = await expectedOrder(endpointId);
      expect(order).toHaveLength(60);
    });

    it('the first page is the 25 newest, newest first, ties broken by id', async () => {
      const page = await list(endpointId);
      expect(page.deliveries.map((d) => d.id)).toEqual(order.slice(0, 25));
      const times = page.deliveries.map((d) => Date.parse(d.createdAt));
      expect(times).toEqual([...times].sort((a, b) => b - a));
      expect(page.deliveries[0].createdAt).toBe('2026-01-15T08:30:00.123Z');
      for (const d of page.deliveries) {
        expect(d).toMatchObject({ endpointId, eventId: expect.stringMatching(EVT), createdAt: expect.stringMatching(ISO_MS) });
      }
      expect(page.nextCursor).toEqual(expect.any(String));
    });

    it('nextCursor pages through all 60 with no duplicates and no gaps, then null', async () => {
      const seen: string[] = [];
      const sizes: number[] = [];
      let cursor: string | undefined;
      for (let i = 0; i < 10; i += 1) {
        const page = await list(endpointId, cursor);
        sizes.push(page.deliveries.length);
        seen.push(...page.deliveries.map((d) => d.id));
        if (page.nextCursor === null) break;
        cursor = page.nextCursor;
      }
      expect(sizes).toEqual([25, 25, 10]);
      expect(seen).toEqual(order);
      expect(new Set(seen).size).toBe(60);
    });

    it('rows arriving between pages do not shift the later pages', async () => {
      const first = await list(endpointId);
      expect(first.deliveries.map((d) => d.id)).toEqual(order.slice(0, 25));
      // Five newer deliveries arrive while the caller reads.
      await insertRows(endpointId, 5, '2026-01-15T09:00:00.000Z', 'late');
      const second = await list(endpointId, first.nextCursor!);
      expect(second.deliveries.map((d) => d.id)).toEqual(order.slice(25, 50));
      await insertRows(endpointId, 3, '2026-01-15T09:10:00.000Z', 'later');
      const third = await list(endpointId, second.nextCursor!);
      expect(third.deliveries.map((d) => d.id)).toEqual(order.slice(50, 60));
      expect(third.nextCursor).toBeNull();

      // A fresh read starts with the new rows.
      const fresh = await list(endpointId);
      const now = await expectedOrder(endpointId);
      expect(now).toHaveLength(68);
      expect(fresh.deliveries.map((d) => d.id)).toEqual(now.slice(0, 25));
      expect(now.slice(8)).toEqual(order);
    });

    it.each([
      ['not base64 JSON', 'garbage'],
      ['an empty string', ''],
      ['too long', 'x'.repeat(600)],
      ['a JSON object', Buffer.from('{"createdAt":"2026-01-01T00:00:00.000Z"}').toString('base64url')],
      ['a one-element array', Buffer.from('["2026-01-01T00:00:00.000Z"]').toString('base64url')],
      ['a bad date', Buffer.from(`["2026-13-45T00:00:00.000Z","${randomUUID()}"]`).toString('base64url')],
      ['a date that is only a number', Buffer.from(`["1","${randomUUID()}"]`).toString('base64url')],
      ['a date PostgreSQL cannot read', Buffer.from(`["Tue, 01 Jan 2030 00:00:00 GMT+0130 (x)","${randomUUID()}"]`).toString('base64url')],
      ['an id that is not a uuid', Buffer.from('["2026-01-01T00:00:00.000Z","------------------------------------"]').toString('base64url')],
      ['numbers', Buffer.from('[1, 2]').toString('base64url')],
    ])('a bad cursor (%s) is isError naming cursor', async (_, cursor) => {
      const message = await toolError(t, s.apiKey, 'list_webhook_deliveries', { endpointId, cursor });
      expect(message).toMatch(/\bcursor\b/);
    });

    it('a cursor must be a string', async () => {
      expect(await toolError(t, s.apiKey, 'list_webhook_deliveries', { endpointId, cursor: 25 })).toContain('cursor');
    });
  });

  it('lists deliveries whose payloads are 2 MB each (the list reads none of them)', async () => {
    const endpointId = await newEndpoint();
    // 26 verbose deliveries with 2 MB of hard-to-compress data each: 52 MB a list must never load.
    await t.db.query(
      `WITH content AS (
             SELECT i, json_build_object('pad', (SELECT string_agg(md5(random()::text || i::text || j::text), '') FROM generate_series(1, 62500) AS j)) AS data
               FROM generate_series(1, 26) AS i),
           payload AS (
             INSERT INTO webhook_payloads (digest, data) SELECT sha256(convert_to(data::text, 'UTF8')), data FROM content RETURNING id)
       INSERT INTO webhook_deliveries (event_id, endpoint_id, user_id, event_type, mode, payload_id, event_created_at, status, created_at)
       SELECT 'evt_' || md5(p.id::text || random()::text), $1, $2, 'message.received', 'verbose', p.id, now(), 'succeeded',
              now() - row_number() OVER (ORDER BY p.id) * interval '1 second'
         FROM payload p`,
      [endpointId, s.userId],
    );
    const first = await list(endpointId);
    expect(first.deliveries).toHaveLength(25);
    const second = await list(endpointId, first.nextCursor!);
    expect(second).toEqual({ deliveries: [expect.objectContaining({ endpointId, status: 'succeeded' })], nextCursor: null });
  });

  describe('resend_webhook_delivery', () => {
    it('creates a new pending row with a fresh evt_ id and the same data, stored once', async () => {
      const endpointId = await newEndpoint();
      const data = { open: { openCount: 2 }, thread: { id: 'th_1', subject: `Hi ${randomUUID()}` } };
      const [original] = await t.db.query(
        `INSERT INTO webhook_deliveries (event_id, endpoint_id, user_id, event_type, mode, payload_id, event_created_at, status,
           attempt_count, last_status_code, last_error, created_at)
         VALUES ($1, $2, $3, 'email.opened', 'verbose', $4, '2026-01-01T00:00:00Z', 'failed', 6, 500, 'HTTP 500', now() - interval '1 hour')
         RETURNING id, event_id`,
        [`evt_${'cd'.repeat(16)}`, endpointId, s.userId, await storePayload(t.db, data)],
      );
      const payloadsBefore = await payloadCount();
      const before = Date.now();
      const { delivery } = await toolOk<{ delivery: Delivery }>(t, s.apiKey, 'resend_webhook_delivery', { deliveryId: original.id });
      expect(delivery).toEqual({
        id: expect.stringMatching(UUID),
        eventId: expect.stringMatching(EVT),
        endpointId,
        eventType: 'email.opened',
        status: 'pending',
        attempts: 0,
        lastStatusCode: null,
        lastError: null,
        lastAttemptAt: null,
        lastDurationMs: null,
        nextAttemptAt: expect.stringMatching(ISO_MS),
        resentFromId: original.id,
        createdAt: expect.stringMatching(ISO_MS),
      });
      expect(delivery.id).not.toBe(original.id);
      expect(delivery.eventId).not.toBe(original.event_id);
      expect(Date.parse(delivery.createdAt)).toBeGreaterThanOrEqual(before - 2000);

      const [copy] = await t.db.query('SELECT * FROM webhook_deliveries WHERE id = $1', [delivery.id]);
      const [source] = await t.db.query('SELECT * FROM webhook_deliveries WHERE id = $1', [original.id]);
      expect(copy).toMatchObject({
        event_id: delivery.eventId,
        endpoint_id: endpointId,
        user_id: s.userId,
        resent_from_id: original.id,
        event_type: 'email.opened',
        mode: 'verbose',
        status: 'pending',
        attempt_count: 0,
        source_event_id: source.source_event_id,
      });
      // The same stored payload, not a copy of it.
      expect(copy.payload_id).toBe(source.payload_id);
      expect(await payloadCount()).toBe(payloadsBefore);
      const [payload] = await t.db.query('SELECT data FROM webhook_payloads WHERE id = $1', [copy.payload_id]);
      expect(payload.data).toEqual(data);
      // A new envelope: a new createdAt, not the original's.
      expect((copy.event_created_at as Date).getTime()).toBeGreaterThanOrEqual(before - 2000);
      // The original is left as it was.
      expect(source).toMatchObject({ status: 'failed', attempt_count: 6, event_id: original.event_id });

      // The copy is the newest row of the log, and may itself be resent.
      const page = await list(endpointId);
      expect(page.deliveries.map((d) => d.id)).toEqual([delivery.id, original.id]);
      const again = await toolOk<{ delivery: Delivery }>(t, s.apiKey, 'resend_webhook_delivery', { deliveryId: delivery.id });
      expect(again.delivery.resentFromId).toBe(delivery.id);
      expect(new Set([original.event_id, delivery.eventId, again.delivery.eventId]).size).toBe(3);
    });

    it('an unknown or malformed delivery id is isError', async () => {
      const ghost = randomUUID();
      expect(await toolError(t, s.apiKey, 'resend_webhook_delivery', { deliveryId: ghost })).toBe(`webhook delivery ${ghost} not found`);
      expect(await toolError(t, s.apiKey, 'resend_webhook_delivery', { deliveryId: 'evt_123' })).toContain('deliveryId');
      expect(await toolError(t, s.apiKey, 'resend_webhook_delivery', {})).toBe('invalid arguments: deliveryId is required');
    });
  });
});
