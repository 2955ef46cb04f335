import { OutboxRelay } from '../../src/events/outbox-relay';
import { fixtureEvent } from '../fixtures/events';
import {
  closeDeliveryTestApp,
  createDeliveryTestApp,
  deliveriesOf,
  deliveriesOfEvent,
  DeliveryTestApp,
  publish,
  register,
  requestsTo,
  waitForRequests,
  waitRelayed,
} from '../support/delivery';
import { toolOk } from '../support/mcp';
import { TestReceiver } from '../support/receiver';
import { createSession, Session } from '../support/session';
import { waitUntil } from '../support/wait';

/**
 * Who receives what. A negative check waits until the relay has handed the event over (its
 * fan-out has committed) and finds no delivery row; then a sentinel, an event the endpoint does
 * receive, is published after it: once the sentinel has arrived, anything the endpoint was wrongly
 * sent would have arrived too (the relay hands events over in order, and queues each batch's
 * deliveries before it takes the next), so the endpoint's requests are checked then.
 */
jest.setTimeout(30_000);

describe('fan-out: ownership, scope, kinds and status', () => {
  let t: DeliveryTestApp;
  const receiver = new TestReceiver();
  let base: string;
  let n = 0;

  beforeAll(async () => {
    base = await receiver.start();
    t = await createDeliveryTestApp({ queueTag: 'fanout' });
  });
  afterAll(async () => {
    await closeDeliveryTestApp(t);
    await receiver.stop();
  });

  const email = (s: Session) => s.lines.find((l) => l.type === 'EMAIL_ACCOUNT')!;
  const phone = (s: Session) => s.lines.find((l) => l.type === 'PHONE_NUMBER')!;
  const path = (name: string) => `/${name}-${++n}`;

  async function endpoint(s: Session, name: string, args: Record<string, unknown> = {}) {
    const p = path(name);
    const { endpoint } = await register(t, s.apiKey, {
      url: `${base}${p}`,
      events: ['message.received', 'contact.merged', 'email_account.health_changed'],
      ...args,
    });
    return { id: endpoint.id, path: p };
  }

  /**
   * Publishes `sentinel`, which `ep` does receive, and waits until it has arrived there; returns
   * every envelope `ep` received by then, the sentinel's included (`sentinelId`).
   */
  async function receivedUpTo(ep: { id: string; path: string }, sentinel: Parameters<typeof publish>[1]) {
    const { outboxId } = await publishAndFanOut(sentinel);
    const row = (await deliveriesOfEvent(t, outboxId)).find((d) => d.endpoint_id === ep.id);
    if (!row) throw new Error(`the sentinel ${sentinel.type} is not for ${ep.path}: pick an event it receives`);
    const envelopes = () => requestsTo(receiver, ep.path).map((r) => JSON.parse(r.body));
    await waitUntil(() => envelopes().some((e) => e.id === row.event_id), `the sentinel ${sentinel.type} at ${ep.path}`);
    return { envelopes: envelopes(), sentinelId: row.event_id };
  }

  /** Publishes, waits for the fan-out to commit, and returns the endpoint ids that got a delivery row. */
  async function publishAndFanOut(event: Parameters<typeof publish>[1]): Promise<{ outboxId: string; endpointIds: string[] }> {
    const outboxId = await publish(t, event);
    await waitRelayed(t, [outboxId]);
    return { outboxId, endpointIds: (await deliveriesOfEvent(t, outboxId)).map((d) => d.endpoint_id) };
  }

  it("an endpoint receives only its owner's events: not another org's", async () => {
    const a = await createSession(t.admin);
    const b = await createSession(t.admin);
    const epA = await endpoint(a, 'org-a');
    const epB = await endpoint(b, 'org-b');

    const fromB = await publishAndFanOut(fixtureEvent('message.received', { orgId: b.orgId, lineId: email(b).id }));
    expect(fromB.endpointIds).toEqual([epB.id]);
    const orgWide = await publishAndFanOut(fixtureEvent('contact.merged', { orgId: b.orgId, lineId: null }));
    expect(orgWide.endpointIds).toEqual([epB.id]);
    await waitForRequests(receiver, epB.path, 2);
    const atA = await receivedUpTo(epA, fixtureEvent('message.received', { orgId: a.orgId, lineId: email(a).id }));
    expect(atA.envelopes.map((e) => e.id)).toEqual([atA.sentinelId]);
  });

  it('a user without membership of the line does not get its events; removing the membership stops them', async () => {
    const owner = await createSession(t.admin);
    const colleague = await createSession(t.admin, { orgId: owner.orgId, lines: ['PHONE_NUMBER'] });
    const epOwner = await endpoint(owner, 'member');
    const epColleague = await endpoint(colleague, 'not-member');

    const first = await publishAndFanOut(fixtureEvent('message.received', { orgId: owner.orgId, lineId: email(owner).id }));
    expect(first.endpointIds).toEqual([epOwner.id]);
    await waitForRequests(receiver, epOwner.path, 1);

    // The colleague joins the line: both get the next event.
    await t.admin.put(`/admin/lines/${email(owner).id}/members/${colleague.userId}`).expect(200);
    const second = await publishAndFanOut(fixtureEvent('message.received', { orgId: owner.orgId, lineId: email(owner).id }));
    expect(second.endpointIds.sort()).toEqual([epOwner.id, epColleague.id].sort());
    await waitForRequests(receiver, epColleague.path, 1);
    await waitForRequests(receiver, epOwner.path, 2);

    // The owner leaves the line: from now on only the colleague.
    const removed = await t.admin.delete(`/admin/lines/${email(owner).id}/members/${owner.userId}`);
    expect(removed.status).toBeLessThan(300);
    const third = await publishAndFanOut(fixtureEvent('message.received', { orgId: owner.orgId, lineId: email(owner).id }));
    expect(third.endpointIds).toEqual([epColleague.id]);
    await waitForRequests(receiver, epColleague.path, 2);
    // An org-wide event still reaches the owner: by then, the third event would have too.
    const atOwner = await receivedUpTo(epOwner, fixtureEvent('contact.merged', { orgId: owner.orgId, lineId: null }));
    expect(atOwner.envelopes.map((e) => e.type)).toEqual(['message.received', 'message.received', 'contact.merged']);
  });

  it('a scoped endpoint receives only events of its lines, including mailbox health', async () => {
    const s = await createSession(t.admin);
    const scoped = await endpoint(s, 'scoped', { channelScope: { allChannels: false, channels: [{ channelType: 'EMAIL_ACCOUNT', channelId: email(s).id }] } });
    const all = await endpoint(s, 'all');

    const onEmail = await publishAndFanOut(fixtureEvent('message.received', { orgId: s.orgId, lineId: email(s).id }));
    expect(onEmail.endpointIds.sort()).toEqual([scoped.id, all.id].sort());
    const onPhone = await publishAndFanOut(fixtureEvent('message.received', { orgId: s.orgId, lineId: phone(s).id }, { channel: 'SMS' }));
    expect(onPhone.endpointIds).toEqual([all.id]);
    const health = await publishAndFanOut(fixtureEvent('email_account.health_changed', { orgId: s.orgId, lineId: email(s).id }));
    expect(health.endpointIds.sort()).toEqual([scoped.id, all.id].sort());

    await waitForRequests(receiver, all.path, 3);
    await waitForRequests(receiver, scoped.path, 2);
    const atScoped = await receivedUpTo(scoped, fixtureEvent('message.received', { orgId: s.orgId, lineId: email(s).id }));
    expect(atScoped.envelopes.map((e) => e.type).sort()).toEqual(['email_account.health_changed', 'message.received', 'message.received']);
    expect(atScoped.envelopes.filter((e) => e.type === 'message.received').map((e) => e.data.message.channel)).toEqual(['EMAIL', 'EMAIL']);
  });

  it('a scoped endpoint never gets contact.merged; an unscoped one does', async () => {
    const s = await createSession(t.admin);
    const scoped = await endpoint(s, 'scoped-merge', {
      channelScope: {
        allChannels: false,
        channels: [
          { channelType: 'EMAIL_ACCOUNT', channelId: email(s).id },
          { channelType: 'PHONE_NUMBER', channelId: phone(s).id },
        ],
      },
    });
    const all = await endpoint(s, 'all-merge');
    const merged = await publishAndFanOut(fixtureEvent('contact.merged', { orgId: s.orgId, lineId: null }));
    expect(merged.endpointIds).toEqual([all.id]);
    await waitForRequests(receiver, all.path, 1);
    const atScoped = await receivedUpTo(scoped, fixtureEvent('message.received', { orgId: s.orgId, lineId: email(s).id }));
    expect(atScoped.envelopes.map((e) => e.id)).toEqual([atScoped.sentinelId]);
  });

  it('a scope entry naming a deleted line matches nothing (fails closed)', async () => {
    const s = await createSession(t.admin);
    const scoped = await endpoint(s, 'deleted-line', {
      channelScope: {
        allChannels: false,
        channels: [
          { channelType: 'EMAIL_ACCOUNT', channelId: email(s).id },
          { channelType: 'PHONE_NUMBER', channelId: phone(s).id },
        ],
      },
    });
    const all = await endpoint(s, 'deleted-line-all');
    const deleted = await t.admin.delete(`/admin/lines/${email(s).id}`);
    expect(deleted.status).toBeLessThan(300);

    const onDeleted = await publishAndFanOut(fixtureEvent('message.received', { orgId: s.orgId, lineId: email(s).id }));
    expect(onDeleted.endpointIds).toEqual([]);
    const healthOnDeleted = await publishAndFanOut(fixtureEvent('email_account.health_changed', { orgId: s.orgId, lineId: email(s).id }));
    expect(healthOnDeleted.endpointIds).toEqual([]);
    // The other entry still matches.
    const onPhone = await publishAndFanOut(fixtureEvent('message.received', { orgId: s.orgId, lineId: phone(s).id }, { channel: 'SMS' }));
    expect(onPhone.endpointIds.sort()).toEqual([scoped.id, all.id].sort());
    await waitForRequests(receiver, scoped.path, 1);
    await waitForRequests(receiver, all.path, 1);
    const sentinel = fixtureEvent('message.received', { orgId: s.orgId, lineId: phone(s).id }, { channel: 'SMS' });
    const atScoped = await receivedUpTo(scoped, sentinel);
    expect(atScoped.envelopes.map((e) => e.data.message.channel)).toEqual(['SMS', 'SMS']);
    await waitUntil(() => requestsTo(receiver, all.path).length >= 2, `the sentinel at ${all.path}`);
    expect(requestsTo(receiver, all.path).map((r) => JSON.parse(r.body).data.message.channel)).toEqual(['SMS', 'SMS']);
  });

  it('each delivery records the line of its event (none for an org-wide event), and a resend keeps it', async () => {
    const s = await createSession(t.admin);
    const ep = await endpoint(s, 'line-of-delivery');
    const onPhone = await publishAndFanOut(fixtureEvent('message.received', { orgId: s.orgId, lineId: phone(s).id }));
    const orgWide = await publishAndFanOut(fixtureEvent('contact.merged', { orgId: s.orgId, lineId: null }));
    const lineOf = async (outboxId: string) =>
      (await t.db.query('SELECT id, line_id FROM webhook_deliveries WHERE source_event_id = $1 AND endpoint_id = $2', [outboxId, ep.id]))[0];
    const phoneDelivery = await lineOf(onPhone.outboxId);
    expect(phoneDelivery.line_id).toBe(phone(s).id);
    expect((await lineOf(orgWide.outboxId)).line_id).toBeNull();
    const { delivery: copy } = await toolOk(t, s.apiKey, 'resend_webhook_delivery', { deliveryId: phoneDelivery.id });
    expect((await t.db.query('SELECT line_id FROM webhook_deliveries WHERE id = $1', [copy.id]))[0].line_id).toBe(phone(s).id);
  });

  it('events are filtered by kind', async () => {
    const s = await createSession(t.admin);
    const sentOnly = await endpoint(s, 'kind', { events: ['message.sent'] });
    const received = await publishAndFanOut(fixtureEvent('message.received', { orgId: s.orgId, lineId: email(s).id }));
    expect(received.endpointIds).toEqual([]);
    const sent = await publishAndFanOut(fixtureEvent('message.sent', { orgId: s.orgId, lineId: email(s).id }));
    expect(sent.endpointIds).toEqual([sentOnly.id]);
    await waitForRequests(receiver, sentOnly.path, 1);
    const atSentOnly = await receivedUpTo(sentOnly, fixtureEvent('message.sent', { orgId: s.orgId, lineId: email(s).id }));
    expect(atSentOnly.envelopes.map((e) => e.type)).toEqual(['message.sent', 'message.sent']);
  });

  it('a disabled endpoint receives nothing', async () => {
    const s = await createSession(t.admin);
    const off = await endpoint(s, 'disabled');
    const on = await endpoint(s, 'enabled');
    const updated = await toolOk(t, s.apiKey, 'update_webhook', { endpointId: off.id, status: 'disabled' });
    expect(updated.endpoint.status).toBe('disabled');

    const event = await publishAndFanOut(fixtureEvent('message.received', { orgId: s.orgId, lineId: email(s).id }));
    expect(event.endpointIds).toEqual([on.id]);
    await waitForRequests(receiver, on.path, 1);
    expect(await deliveriesOf(t, off.id)).toHaveLength(0);
    // Enabled again, it receives what comes next, and nothing of the time it was disabled.
    await toolOk(t, s.apiKey, 'update_webhook', { endpointId: off.id, status: 'active' });
    const atOff = await receivedUpTo(off, fixtureEvent('message.received', { orgId: s.orgId, lineId: email(s).id }));
    expect(atOff.envelopes.map((e) => e.id)).toEqual([atOff.sentinelId]);
  });

  it('one delivery row per (event, endpoint): a relay replay creates no second row and no second request', async () => {
    const s = await createSession(t.admin);
    const ep = await endpoint(s, 'replay');
    const { outboxId } = await publishAndFanOut(fixtureEvent('message.received', { orgId: s.orgId, lineId: email(s).id }));
    const [first] = await waitForRequests(receiver, ep.path, 1);
    const [row] = await deliveriesOf(t, ep.id);

    // Replay: the row looks un-relayed again, and the relay is woken.
    const [, affected] = await t.db.query('UPDATE outbox_events SET relayed_at = NULL WHERE id = $1', [outboxId]);
    expect(affected).toBe(1);
    t.app.get(OutboxRelay).wake();
    await waitRelayed(t, [outboxId]);

    const rows = await deliveriesOf(t, ep.id);
    expect(rows).toHaveLength(1);
    expect(rows[0].id).toBe(row.id);
    expect(rows[0].event_id).toBe(JSON.parse(first.body).id);
    const atEp = await receivedUpTo(ep, fixtureEvent('message.received', { orgId: s.orgId, lineId: email(s).id }));
    expect(atEp.envelopes.map((e) => e.id)).toEqual([JSON.parse(first.body).id, atEp.sentinelId]);
  });

  it('endpoints that get the same variant of an event share one stored payload; a replay reaching a new endpoint reuses it', async () => {
    const s = await createSession(t.admin, { tier: 'POWER' });
    const concise = await Promise.all([1, 2, 3, 4].map(() => endpoint(s, 'share-concise')));
    const verbose3 = await Promise.all([1, 2].map(() => endpoint(s, 'share-v3', { mode: 'verbose', messageHistoryCount: 3 })));
    // The fixture thread has six messages: a history of 10 or of 50 keeps all six, so the same payload.
    const verboseAll = [
      await endpoint(s, 'share-v10', { mode: 'verbose', messageHistoryCount: 10 }),
      await endpoint(s, 'share-v50', { mode: 'verbose', messageHistoryCount: 50 }),
    ];
    const { outboxId, endpointIds } = await publishAndFanOut(fixtureEvent('message.received', { orgId: s.orgId, lineId: email(s).id }));
    expect(endpointIds).toHaveLength(8);

    const payloadOf = async (): Promise<Map<string, string>> =>
      new Map(
        (await t.db.query('SELECT endpoint_id, payload_id FROM webhook_deliveries WHERE source_event_id = $1', [outboxId])).map(
          (r: { endpoint_id: string; payload_id: string }) => [r.endpoint_id, r.payload_id],
        ),
      );
    const payloads = await payloadOf();
    const distinct = (eps: Array<{ id: string }>) => new Set(eps.map((ep) => payloads.get(ep.id)));
    expect(distinct(concise).size).toBe(1);
    expect(distinct(verbose3).size).toBe(1);
    expect(distinct(verboseAll).size).toBe(1);
    expect(new Set(payloads.values()).size).toBe(3);
    const stored: Array<{ id: string; data: { thread: { recentMessages?: unknown[] } } }> = await t.db.query(
      'SELECT id, data FROM webhook_payloads WHERE id = ANY($1::bigint[])',
      [[...new Set(payloads.values())]],
    );
    expect(stored.map((p) => p.data.thread.recentMessages?.length ?? 'concise').sort()).toEqual([3, 6, 'concise']);

    // Every endpoint is sent its own envelope around the shared data.
    const bodies = await Promise.all(
      [...concise, ...verbose3, ...verboseAll].map(async (ep) => JSON.parse((await waitForRequests(receiver, ep.path, 1))[0].body)),
    );
    expect(new Set(bodies.map((b) => b.id)).size).toBe(8);
    expect(new Set(bodies.slice(0, 4).map((b) => JSON.stringify(b.data))).size).toBe(1);
    expect(bodies.slice(0, 4).map((b) => b.endpointId)).toEqual(concise.map((ep) => ep.id));

    // A replay after a ninth endpoint registered: it gets a delivery, with the concise payload stored before.
    const late = await endpoint(s, 'share-late');
    const [{ count: before }] = await t.db.query('SELECT count(*)::int AS count FROM webhook_payloads');
    await t.db.query('UPDATE outbox_events SET relayed_at = NULL WHERE id = $1', [outboxId]);
    t.app.get(OutboxRelay).wake();
    await waitRelayed(t, [outboxId]);
    const after = await payloadOf();
    expect(after.size).toBe(9);
    expect(after.get(late.id)).toBe(payloads.get(concise[0].id));
    const [{ count }] = await t.db.query('SELECT count(*)::int AS count FROM webhook_payloads');
    expect(count).toBe(before);
    const [lateBody] = await waitForRequests(receiver, late.path, 1);
    expect(JSON.parse(lateBody.body).data).toEqual(bodies[0].data);
  });
});
