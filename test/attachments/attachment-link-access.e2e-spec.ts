import { randomBytes } from 'node:crypto';
import { toolOk } from '../support/mcp';
import { createMessagingTestApp, Hook, MessagingTestApp, partnerPhone } from '../support/messaging-hooks';
import { createSession, Session, uniquePhone } from '../support/session';
import { INGEST_TOKEN } from '../support/test-env';
import { waitUntil } from '../support/wait';

/**
 * Issue 30: a signed download link works only while whoever it was minted for may still see the
 * attachment's line. A link taken before a membership was removed, the line deleted or the key
 * revoked (or narrowed) is refused at once, with the answer a link to an attachment that no
 * longer exists gets: nothing tells the holder why.
 */
jest.setTimeout(60_000);

describe('signed attachment links end when access to the line ends', () => {
  let m: MessagingTestApp;
  let owner: Session;
  let member: Session;
  let memberHook: Hook;

  beforeAll(async () => {
    m = await createMessagingTestApp();
    owner = await createSession(m.admin, { role: 'OWNER', lines: [] });
    member = await createSession(m.admin, { orgId: owner.orgId, role: 'MEMBER', lines: [] });
    memberHook = await Hook.register(m, member.apiKey, { events: ['message.received'], mode: 'verbose' });
  });
  afterAll(async () => {
    await m?.close();
  });

  const CONTENT = Buffer.from(`PHONE-LINE CONFIDENTIAL ${randomBytes(8).toString('hex')}\n`);

  /** A new phone line of the org, the owner and the member on it, and an inbound SMS with two attachments. */
  async function lineWithAttachment(): Promise<{ lineId: string; address: string; attachmentId: string; spareId: string; messageId: string }> {
    const line = await m.admin.post(`/admin/orgs/${owner.orgId}/lines`, { type: 'PHONE_NUMBER', address: uniquePhone() });
    expect(line.status).toBe(201);
    for (const user of [owner, member]) expect((await m.admin.put(`/admin/lines/${line.body.id}/members/${user.userId}`)).status).toBe(200);
    const media = ['secret.txt', 'spare.txt'].map((filename) => ({ filename, mimeType: 'text/plain', contentBase64: CONTENT.toString('base64') }));
    const res = await m
      .http()
      .post('/ingest/sms/inbound')
      .set('Authorization', `Bearer ${INGEST_TOKEN}`)
      .send({ to: line.body.address, from: partnerPhone(), body: 'see attached', providerMessageId: `link-${randomBytes(6).toString('hex')}`, media });
    expect(res.status).toBe(201);
    const [attachmentId, spareId] = res.body.attachmentIds;
    return { lineId: line.body.id, address: line.body.address, attachmentId, spareId, messageId: res.body.messageId };
  }

  /** A download link through read_attachment with this API key. */
  const linkThroughKey = async (apiKey: string, attachmentId: string): Promise<string> =>
    (await toolOk(m, apiKey, 'read_attachment', { attachmentId })).downloadUrl;

  /** The link the member's verbose webhook received for the attachment (signed for the endpoint's owner). */
  async function linkFromWebhook(messageId: string, attachmentId: string): Promise<string> {
    const event = await waitUntil(
      () => memberHook.events('message.received').find((e) => e.data.message.id === messageId),
      `message.received of ${messageId} at the member's endpoint`,
    );
    return event.data.attachments.find((a: { id: string }) => a.id === attachmentId).url;
  }

  /** GET of the link on this app (whatever PUBLIC_BASE_URL its host is): status, JSON or bytes, content type. */
  async function download(link: string): Promise<{ status: number; contentType: string | null; body: Buffer }> {
    const url = new URL(link);
    const res = await fetch(`${m.baseUrl}${url.pathname}${url.search}`);
    return { status: res.status, contentType: res.headers.get('content-type'), body: Buffer.from(await res.arrayBuffer()) };
  }

  async function expectServed(link: string): Promise<void> {
    const res = await download(link);
    expect(res.status).toBe(200);
    expect(res.body.equals(CONTENT)).toBe(true);
  }

  /**
   * The link is refused exactly as a good link to an attachment that no longer exists: `gone` is
   * such a link (its attachment deleted), and the answers differ only by the attachment id.
   */
  async function expectRefusedAsGone(link: string, gone: string): Promise<void> {
    const [refused, missing] = await Promise.all([download(link), download(gone)]);
    expect(missing.status).toBe(404);
    const idOf = (l: string) => new URL(l).pathname.split('/')[2];
    expect({ status: refused.status, contentType: refused.contentType, body: refused.body.toString('utf8') }).toEqual({
      status: missing.status,
      contentType: missing.contentType,
      body: missing.body.toString('utf8').replaceAll(idOf(gone), idOf(link)),
    });
  }

  /** A good link (of this holder) to the spare attachment, which is then deleted. */
  async function goneLink(apiKey: string, spareId: string): Promise<string> {
    const link = await linkThroughKey(apiKey, spareId);
    await m.db.query('DELETE FROM attachments WHERE id = $1', [spareId]);
    return link;
  }

  it('a link names its holder: the user, and the key when minted through one', async () => {
    const { attachmentId, messageId } = await lineWithAttachment();
    const throughKey = new URL(await linkThroughKey(member.apiKey, attachmentId));
    expect(throughKey.searchParams.get('for')).toMatch(/^[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{22}$/);
    const fromWebhook = new URL(await linkFromWebhook(messageId, attachmentId));
    expect(fromWebhook.searchParams.get('for')).toMatch(/^[A-Za-z0-9_-]{22}$/);
    await expectServed(throughKey.href);
    await expectServed(fromWebhook.href);

    // A link of the earlier form (no holder) is refused as an invalid link is.
    const earlier = new URL(throughKey.href);
    earlier.searchParams.delete('for');
    const res = await download(earlier.href);
    expect(res.status).toBe(403);
    expect(JSON.parse(res.body.toString('utf8'))).toMatchObject({ statusCode: 403, message: expect.stringMatching(/invalid or has expired/) });
  });

  it("removing a member from the line ends their links at once; the owner's keeps working", async () => {
    const { lineId, attachmentId, spareId, messageId } = await lineWithAttachment();
    const memberLink = await linkThroughKey(member.apiKey, attachmentId);
    const memberWebhookLink = await linkFromWebhook(messageId, attachmentId);
    const ownerLink = await linkThroughKey(owner.apiKey, attachmentId);
    const gone = await goneLink(member.apiKey, spareId);
    await expectServed(memberLink);
    await expectServed(memberWebhookLink);

    expect((await m.admin.delete(`/admin/lines/${lineId}/members/${member.userId}`)).status).toBe(204);

    await expectRefusedAsGone(memberLink, gone);
    await expectRefusedAsGone(memberWebhookLink, gone);
    await expectServed(ownerLink);
  });

  it('deleting the line ends every link to its attachments', async () => {
    const { lineId, attachmentId, spareId } = await lineWithAttachment();
    const memberLink = await linkThroughKey(member.apiKey, attachmentId);
    const ownerLink = await linkThroughKey(owner.apiKey, attachmentId);
    const gone = await goneLink(owner.apiKey, spareId);
    await expectServed(memberLink);
    await expectServed(ownerLink);

    expect((await m.admin.delete(`/admin/lines/${lineId}`)).status).toBe(204);

    await expectRefusedAsGone(memberLink, gone);
    await expectRefusedAsGone(ownerLink, gone);
  });

  it("revoking a key, or narrowing it, ends the links minted through it; the member's other key's link keeps working", async () => {
    const { attachmentId, spareId } = await lineWithAttachment();
    const created = await m.admin.post(`/admin/users/${member.userId}/api-keys`, { name: 'second key', channelAccess: { mode: 'ALL' } });
    expect(created.status).toBe(201);
    const second = { key: created.body.key as string, id: created.body.id as string };
    const third = await m.admin.post(`/admin/users/${member.userId}/api-keys`, { name: 'third key', channelAccess: { mode: 'ALL' } });
    expect(third.status).toBe(201);

    const revokedLink = await linkThroughKey(second.key, attachmentId);
    const narrowedLink = await linkThroughKey(third.body.key, attachmentId);
    const stillLink = await linkThroughKey(member.apiKey, attachmentId);
    const gone = await goneLink(member.apiKey, spareId);
    await expectServed(revokedLink);
    await expectServed(narrowedLink);

    expect((await m.admin.delete(`/admin/api-keys/${second.id}`)).status).toBe(204);
    await expectRefusedAsGone(revokedLink, gone);

    // The third key loses the read permission (read_attachment's), then gets it back: the link follows.
    const patchThird = (body: object) => m.admin.patch(`/admin/api-keys/${third.body.id}`, body);
    expect((await patchThird({ permissions: ['send', 'webhooks'] })).status).toBe(200);
    await expectRefusedAsGone(narrowedLink, gone);
    expect((await patchThird({ permissions: ['read'] })).status).toBe(200);
    await expectServed(narrowedLink);

    // The third key's allowlist no longer names the line.
    const narrowed = await patchThird({ channelAccess: { mode: 'LINES', lines: [uniquePhone()] } });
    expect(narrowed.status).toBe(200);
    await expectRefusedAsGone(narrowedLink, gone);

    await expectServed(stillLink);
  });
});
