import { randomBytes } from 'node:crypto';
import { DeliveryQueue } from '../../src/delivery/delivery-queue';
import { toolOk } from '../support/mcp';
import { createMessagingTestApp, inboundSms, MessagingTestApp, partnerPhone } from '../support/messaging-hooks';
import { createSession, Session } from '../support/session';
import { waitUntil } from '../support/wait';

/**
 * A delivery waiting for a retry is sent only while its endpoint still receives the event's line
 * (issue 30): once the owner's membership of the line is removed, the line is deleted, or the
 * endpoint's scope drops the line, the retry that comes due is not sent (not to the URL the owner
 * set meanwhile either) and the delivery ends `cancelled`, never retried; a delivery of a line
 * the endpoint still receives goes to the new URL. Real inbound SMS, a real receiver, the real
 * delivery engine; the retry comes due by promoting its delayed job.
 */

const SECRET_BODY = 'PHONE-LINE CONFIDENTIAL';
const KEPT_BODY = 'kept line, still yours';

interface Row {
  id: string;
  line_id: string;
  status: string;
  attempt_count: number;
  last_error: string | null;
  next_attempt_at: Date | null;
}

describe('retries of a line the endpoint no longer receives', () => {
  let m: MessagingTestApp;

  beforeAll(async () => {
    // The first retry is an hour away: it comes due only when the test promotes its job.
    m = await createMessagingTestApp({ DELIVERY_RETRY_SCHEDULE: '1h,1h' });
    m.receiver.respond = (req) => (req.url.startsWith('/down/') ? { status: 500, body: 'down' } : { status: 200, body: 'ok' });
  });
  afterAll(async () => {
    await m?.close();
  });

  const rowsOf = (endpointId: string): Promise<Row[]> =>
    m.db.query(
      `SELECT id, line_id, status, attempt_count, last_error, next_attempt_at FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY created_at, id`,
      [endpointId],
    );
  const bodiesAt = (path: string): string[] => m.receiver.requests.filter((r) => r.url === path).map((r) => r.body);

  interface Setup {
    s: Session;
    endpointId: string;
    lost: Session['lines'][number];
    kept: Session['lines'][number];
    hidden: string;
    control: string;
  }

  /**
   * A MEMBER with two phone lines whose endpoint (all lines, or `scoped` to both by name) answers
   * 500: one delivery of a message on each line, each `retrying` after its first attempt.
   */
  async function setup(scoped = false): Promise<Setup> {
    const s = await createSession(m.admin, { role: 'MEMBER', lines: ['PHONE_NUMBER', 'PHONE_NUMBER'] });
    const [lost, kept] = s.lines;
    const { endpoint } = await toolOk(m, s.apiKey, 'register_webhook', {
      url: `${m.receiverUrl}/down/${randomBytes(4).toString('hex')}`,
      events: ['message.received'],
      ...(scoped ? { channelScope: { allChannels: false, channels: s.lines.map((l) => ({ channelType: l.type, channelId: l.id })) } } : {}),
    });
    await inboundSms(m, lost.address, partnerPhone(), SECRET_BODY);
    await inboundSms(m, kept.address, partnerPhone(), KEPT_BODY);
    const rows = await waitUntil(async () => {
      const found = await rowsOf(endpoint.id);
      return found.length === 2 && found.every((r) => r.status === 'retrying' && r.attempt_count === 1) && found;
    }, 'both deliveries to wait for their retry');
    return {
      s,
      endpointId: endpoint.id,
      lost,
      kept,
      hidden: rows.find((r) => r.line_id === lost.id)!.id,
      control: rows.find((r) => r.line_id === kept.id)!.id,
    };
  }

  /** The owner points the endpoint at a fresh URL (and `channelScope`, if given); both retries come due. */
  async function retryAtFreshUrl({ s, endpointId, hidden, control }: Setup, channelScope?: object): Promise<string> {
    const fresh = `/fresh/${randomBytes(4).toString('hex')}`;
    await toolOk(m, s.apiKey, 'update_webhook', { endpointId, url: `${m.receiverUrl}${fresh}`, ...(channelScope ? { channelScope } : {}) });
    const queue = m.app.get(DeliveryQueue).queue;
    for (const id of [hidden, control]) {
      const job = await waitUntil(async () => {
        const found = await queue.getJob(`${id}:2`);
        return found && (await found.isDelayed()) && found;
      }, `the delayed retry of ${id}`);
      await job.promote();
    }
    return fresh;
  }

  /** The lost line's retry ends cancelled, unsent, for good; the kept line's arrives at the fresh URL. */
  async function expectOnlyKeptSent({ endpointId, hidden, control }: Setup, fresh: string): Promise<void> {
    const rows = await waitUntil(async () => {
      const found = await rowsOf(endpointId);
      return found.every((r) => r.status !== 'pending' && r.status !== 'retrying') && found;
    }, 'both deliveries to end');
    expect(rows.find((r) => r.id === hidden)).toMatchObject({
      status: 'cancelled',
      attempt_count: 1,
      next_attempt_at: null,
      last_error: expect.stringContaining("no longer receives this line's events"),
    });
    expect(rows.find((r) => r.id === control)).toMatchObject({ status: 'succeeded', attempt_count: 2 });
    // One attempt of the lost line's delivery, the first (to the old URL); none since.
    const attempts: Array<{ attempt_number: number }> = await m.db.query(
      'SELECT attempt_number FROM webhook_delivery_attempt_log WHERE delivery_id = $1 ORDER BY attempt_number',
      [hidden],
    );
    expect(attempts.map((a) => a.attempt_number)).toEqual([1]);
    expect(bodiesAt(fresh)).toHaveLength(1);
    expect(bodiesAt(fresh)[0]).toContain(KEPT_BODY);
    expect(bodiesAt(fresh)[0]).not.toContain(SECRET_BODY);
  }

  it("a MEMBER whose membership of the line is removed gets none of the line's retries at a URL set afterwards", async () => {
    const setupDone = await setup();
    expect((await m.admin.delete(`/admin/lines/${setupDone.lost.id}/members/${setupDone.s.userId}`)).status).toBe(204);
    await expectOnlyKeptSent(setupDone, await retryAtFreshUrl(setupDone));
  });

  it("a MEMBER whose line is deleted gets none of the line's retries at a URL set afterwards", async () => {
    const setupDone = await setup();
    expect((await m.admin.delete(`/admin/lines/${setupDone.lost.id}`)).status).toBe(204);
    await expectOnlyKeptSent(setupDone, await retryAtFreshUrl(setupDone));
  });

  it('an endpoint narrowed to the other line sends no more retries of the line it dropped; the owner sees why', async () => {
    const setupDone = await setup(true);
    const { s, endpointId, kept, hidden } = setupDone;
    const fresh = await retryAtFreshUrl(setupDone, { allChannels: false, channels: [{ channelType: kept.type, channelId: kept.id }] });
    await expectOnlyKeptSent(setupDone, fresh);
    // The owner still has the line, so the delivery is theirs to read, with the reason it was not sent.
    const { deliveries } = await toolOk(m, s.apiKey, 'list_webhook_deliveries', { endpointId, status: 'cancelled' });
    expect(deliveries).toEqual([expect.objectContaining({ id: hidden, status: 'cancelled', lastError: expect.stringContaining('left its scope') })]);
  });
});
