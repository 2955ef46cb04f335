import { DataSource } from 'typeorm';
import { OutboxRepository } from '../../src/events/outbox.repository';
import { createTestApp, TestApp } from '../support/app';
import { createSession } from '../support/session';

const PUBLISHERS = 4;
const TRANSACTIONS_PER_PUBLISHER = 25;
const RELAYS = 3;

/**
 * Feed positions are commit-ordered (docs/decisions.md, "Event feed positions"): publishers commit
 * events concurrently, several relays claim and position them concurrently (each pausing between
 * drawing its positions and committing, the window in which a position drawn later could commit
 * first), and a reader that only ever asks for positions after the highest it has seen, as a
 * cursor does, ends with every event exactly once. Without the relay's lock, a relay that drew
 * lower positions and committed later would have them skipped.
 */
describe('event feed positions under concurrent publishers and relays', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('a reader following positions never sees p + 1 before p: nothing skipped, nothing twice', async () => {
    const { orgId } = await createSession(t.admin, { lines: [] });
    const db = t.app.get(DataSource);
    const outbox = t.app.get(OutboxRepository);
    let publishing = true;

    const publisher = async (n: number) => {
      for (let i = 0; i < TRANSACTIONS_PER_PUBLISHER; i += 1) {
        await db.transaction(async (manager) => {
          const events = Array.from({ length: 1 + ((n + i) % 3) }, () => ({
            type: 'contact.merged' as const,
            orgId,
            lineId: null,
            data: { contact: { id: `c-${n}-${i}`, displayName: null, identities: [] }, mergedContactIds: [] },
          }));
          await outbox.insert(manager, events);
          await manager.query('SELECT pg_sleep(random() * 0.005)');
        });
      }
    };
    const relay = async () => {
      for (;;) {
        const claimed = await db.transaction(async (manager) => {
          const events = await outbox.claimBatch(manager, 4);
          if (events.length === 0) return 0;
          await outbox.markRelayed(
            manager,
            events.map((e) => e.id),
          );
          await manager.query('SELECT pg_sleep(random() * 0.01)'); // between drawing positions and committing
          return events.length;
        });
        if (claimed === 0 && !publishing) return;
      }
    };
    const seen: string[] = [];
    const reader = async () => {
      let cursor = '0';
      for (;;) {
        const done = !publishing && (await outbox.pending()).count === 0;
        const rows: Array<{ p: string }> = await db.query(
          'SELECT feed_position::text AS p FROM outbox_events WHERE org_id = $1 AND feed_position > $2::bigint ORDER BY feed_position',
          [orgId, cursor],
        );
        for (const row of rows) seen.push(row.p);
        if (rows.length > 0) cursor = rows[rows.length - 1].p;
        if (done && rows.length === 0) return;
      }
    };

    const relays = Array.from({ length: RELAYS }, relay);
    const reading = reader();
    await Promise.all(Array.from({ length: PUBLISHERS }, (_, n) => publisher(n)));
    publishing = false;
    await Promise.all([...relays, reading]);

    const all: Array<{ p: string }> = await db.query('SELECT feed_position::text AS p FROM outbox_events WHERE org_id = $1 ORDER BY feed_position', [orgId]);
    expect(all.length).toBeGreaterThan(PUBLISHERS * TRANSACTIONS_PER_PUBLISHER);
    expect(all.every((r) => r.p !== null)).toBe(true);
    expect(seen).toEqual(all.map((r) => r.p));
  });
});
