import { createMcpTestApp, MCP_URL, McpTestApp } from '../support/mcp';
import { mirroredHeaders, modernMessage, modernRpc, SERVER_IDENTITY, SERVER_INFO, SUBSCRIPTION_ID } from '../support/mcp-modern';
import { connectApp, refreshTokens } from '../support/oauth';
import { listen as listenOn, RawConnection } from '../support/raw-http';
import { createSession, Session } from '../support/session';
import { SseClient } from '../support/sse';
import { waitUntil } from '../support/wait';
import { signInBrowser } from '../support/web';

type Id = string | number;

/** A subscriptions/listen stream read over its own HTTP connection, as a client sees it. */
interface Listener {
  id: Id;
  stream: SseClient;
  /** The JSON-RPC messages of the stream, in order. */
  messages(): Array<Record<string, any>>;
}

const acknowledged = (id: Id, notifications: object) => ({
  jsonrpc: '2.0',
  method: 'notifications/subscriptions/acknowledged',
  params: { notifications, _meta: { [SUBSCRIPTION_ID]: id } },
});
const listChanged = (id: Id) => ({ jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: { [SUBSCRIPTION_ID]: id } } });
const endedGracefully = (id: Id) => ({
  jsonrpc: '2.0',
  id,
  result: { resultType: 'complete', _meta: { [SUBSCRIPTION_ID]: id, [SERVER_INFO]: SERVER_IDENTITY } },
});
const KEY_ENDED = 'the API key no longer works (revoked, expired or replaced): this subscription has ended; listen again with a valid credential';
const APP_ENDED = "the app's access token no longer works (revoked, expired or replaced): this subscription has ended; listen again with a valid credential";
const endedUnauthorized = (id: Id, message: string) => ({ jsonrpc: '2.0', id, error: { code: -32001, message } });

/** Opens a listen stream on `t` for `token` with `notifications`, as a conforming 2026-07-28 client does (envelope and mirrored headers). */
async function openListen(t: McpTestApp, token: string, notifications: unknown, id: Id): Promise<Listener> {
  const base = `http://127.0.0.1:${await listenOn(t.app.getHttpServer())}`;
  const body = modernMessage('subscriptions/listen', notifications === undefined ? {} : { notifications }, { id });
  const headers = {
    authorization: `Bearer ${token}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    ...mirroredHeaders(body),
  };
  const stream = await SseClient.post(base, MCP_URL, headers, JSON.stringify(body));
  return { id, stream, messages: () => stream.events.map((event) => JSON.parse(event.data)) };
}

/** Opens a stream and waits for its acknowledgement. */
async function opened(t: McpTestApp, token: string, id: Id, notifications: unknown = { toolsListChanged: true }): Promise<Listener> {
  const listener = await openListen(t, token, notifications, id);
  if (listener.stream.status !== 200)
    throw new Error(`listen ${id} answered ${listener.stream.status}: ${await ended(listener).then(() => listener.stream.text)}`);
  await waitUntil(() => listener.stream.events.length > 0, `the acknowledgement of listen ${id}`);
  return listener;
}

/** Waits until the server has ended the stream. */
async function ended(listener: Listener): Promise<void> {
  await waitUntil(() => listener.stream.ended, `listen ${listener.id} to end`);
}

function expectStreamHead(stream: SseClient) {
  expect(stream.status).toBe(200);
  expect(stream.response.headers['content-type']).toBe('text/event-stream; charset=utf-8');
  expect(stream.response.headers['x-accel-buffering']).toBe('no');
  expect(stream.response.headers['cache-control']).toBe('no-cache, no-transform');
  expect(stream.response.headers['mcp-session-id']).toBeUndefined();
}

/**
 * subscriptions/listen of revision 2026-07-28 ("Subscriptions"; "Streamable HTTP: Receiving
 * Messages"), read as raw server-sent events: the acknowledgement first, what the filter may hold,
 * notifications/tools/list_changed to the caller whose tools or reach changed (and to no one else),
 * the end of a stream whose credential stops working, the bounds, and shutdown.
 */
describe('MCP 2026-07-28 subscriptions/listen over raw HTTP', () => {
  let t: McpTestApp;
  let s: Session;
  const open: Listener[] = [];

  beforeAll(async () => {
    t = await createMcpTestApp();
    s = await createSession(t.admin, { lines: ['PHONE_NUMBER', 'PHONE_NUMBER'] });
  });
  afterEach(() => {
    for (const listener of open.splice(0)) listener.stream.disconnect();
  });
  afterAll(async () => {
    await t?.close();
  });

  const track = (listener: Listener) => (open.push(listener), listener);
  const newKey = async (body: Record<string, unknown> = {}): Promise<{ id: string; key: string }> =>
    (await t.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'listen', channelAccess: { mode: 'ALL' }, ...body }).expect(201)).body;

  describe('the acknowledgement', () => {
    it.each([
      ['a string id', 'listen-1'],
      ['a number id', 7],
    ])('comes first, tagged with the listen request’s id (%s), and honours toolsListChanged only', async (_case, id) => {
      const listener = track(
        await opened(t, s.apiKey, id, {
          toolsListChanged: true,
          promptsListChanged: true,
          resourcesListChanged: true,
          resourceSubscriptions: ['file:///config.json'],
        }),
      );
      expectStreamHead(listener.stream);
      expect(listener.stream.events[0].event).toBe('message');
      expect(listener.messages()).toEqual([acknowledged(id, { toolsListChanged: true })]);
      expect(listener.stream.text.startsWith(`event: message\ndata: ${JSON.stringify(acknowledged(id, { toolsListChanged: true }))}\n\n`)).toBe(true);
      expect(listener.stream.ended).toBe(false);
    });

    it.each([
      ['nothing this server sends', { promptsListChanged: true, resourcesListChanged: true, resourceSubscriptions: ['file:///a'] }],
      ['an empty filter', {}],
      ['toolsListChanged false', { toolsListChanged: false }],
    ])('a filter asking %s is acknowledged {} and the stream ends with the listen result', async (_case, filter) => {
      const listener = await openListen(t, s.apiKey, filter, 'nothing');
      await ended(listener);
      expectStreamHead(listener.stream);
      expect(listener.messages()).toEqual([acknowledged('nothing', {}), endedGracefully('nothing')]);
      expect(listener.stream.response.complete).toBe(true);
    });

    it.each([
      ['no notifications filter', undefined, 'Invalid params: params.notifications is required: an object such as {"toolsListChanged": true}'],
      ['a filter that is a list', ['toolsListChanged'], 'Invalid params: params.notifications is required: an object such as {"toolsListChanged": true}'],
      ['a filter that is null', null, 'Invalid params: params.notifications is required: an object such as {"toolsListChanged": true}'],
      ['toolsListChanged "yes"', { toolsListChanged: 'yes' }, 'Invalid params: params.notifications.toolsListChanged must be a boolean'],
      ['promptsListChanged 1', { promptsListChanged: 1 }, 'Invalid params: params.notifications.promptsListChanged must be a boolean'],
      [
        'resourceSubscriptions a string',
        { resourceSubscriptions: 'file:///a' },
        'Invalid params: params.notifications.resourceSubscriptions must be a list of URIs (strings)',
      ],
      [
        'resourceSubscriptions of numbers',
        { resourceSubscriptions: [1] },
        'Invalid params: params.notifications.resourceSubscriptions must be a list of URIs (strings)',
      ],
    ])('%s is -32602 in the answer, and no stream opens', async (_case, filter, message) => {
      const listener = await openListen(t, s.apiKey, filter, 'bad');
      await ended(listener);
      expect(listener.stream.status).toBe(200);
      expect(listener.stream.response.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(JSON.parse(listener.stream.text)).toEqual({ jsonrpc: '2.0', id: 'bad', error: { code: -32602, message } });
    });

    it('a listen whose headers do not mirror it is refused as any request (400, -32020)', async () => {
      const base = `http://127.0.0.1:${await listenOn(t.app.getHttpServer())}`;
      const body = modernMessage('subscriptions/listen', { notifications: { toolsListChanged: true } }, { id: 'mirror' });
      const headers = { authorization: `Bearer ${s.apiKey}`, 'content-type': 'application/json', ...mirroredHeaders(body), 'Mcp-Method': 'tools/list' };
      const stream = await SseClient.post(base, MCP_URL, headers, JSON.stringify(body));
      await waitUntil(() => stream.ended, 'the refusal');
      expect(stream.status).toBe(400);
      expect(JSON.parse(stream.text)).toEqual({
        jsonrpc: '2.0',
        id: 'mirror',
        error: { code: -32020, message: `Header mismatch: the Mcp-Method header "tools/list" does not match the body's method "subscriptions/listen"` },
      });
    });
  });

  describe('notifications/tools/list_changed', () => {
    it('a permission change is told to that key’s stream only, a channel-access change too, and revoking a key ends its stream with -32001', async () => {
      const [a, b] = [await newKey(), await newKey()];
      const la = track(await opened(t, a.key, 'a'));
      const lb = track(await opened(t, b.key, 'b'));

      // A's permissions change: A hears it, and its tools/list shows it.
      expect((await t.admin.patch(`/admin/api-keys/${a.id}`, { permissions: ['read'] })).status).toBe(200);
      await waitUntil(() => la.messages().length === 2, "A's list_changed");
      expect(la.messages()[1]).toEqual(listChanged('a'));
      const names = (await modernRpc(t, a.key, 'tools/list')).body.result.tools.map((tool: { name: string }) => tool.name);
      expect(names).not.toContain('register_webhook');

      // Then B's channel access: B hears it.
      expect((await t.admin.patch(`/admin/api-keys/${b.id}`, { channelAccess: { mode: 'LINES', lines: [s.lines[1].address] } })).status).toBe(200);
      await waitUntil(() => lb.messages().length === 2, "B's list_changed");

      // B revoked: its stream ends with an error answering the listen request. What B's stream carried
      // came before that end, and A's change came before B's: one list_changed, B's own, nothing of A's.
      expect((await t.admin.delete(`/admin/api-keys/${b.id}`)).status).toBe(204);
      await ended(lb);
      expect(lb.messages()).toEqual([acknowledged('b', { toolsListChanged: true }), listChanged('b'), endedUnauthorized('b', KEY_ENDED)]);
      expect(lb.stream.response.complete).toBe(true);

      // And A's stream, ended the same way, heard nothing of B's changes or of B's end.
      expect((await t.admin.delete(`/admin/api-keys/${a.id}`)).status).toBe(204);
      await ended(la);
      expect(la.messages()).toEqual([acknowledged('a', { toolsListChanged: true }), listChanged('a'), endedUnauthorized('a', KEY_ENDED)]);
      expect(la.stream.response.complete).toBe(true);

      // A revoked key listens no more.
      const again = await openListen(t, a.key, { toolsListChanged: true }, 'again');
      await ended(again);
      expect(again.stream.status).toBe(401);
    });

    it('a second stream of the same key hears the same change, each under its own id', async () => {
      const k = await newKey();
      const [one, two] = [track(await opened(t, k.key, 'one')), track(await opened(t, k.key, 2))];
      expect((await t.admin.patch(`/admin/api-keys/${k.id}`, { permissions: ['read', 'send'] })).status).toBe(200);
      await waitUntil(() => one.messages().length === 2 && two.messages().length === 2, 'both streams to hear the change');
      expect(one.messages()[1]).toEqual(listChanged('one'));
      expect(two.messages()[1]).toEqual(listChanged(2));
    });
  });

  describe('an OAuth grant', () => {
    it('ends its stream with -32001 when the grant is revoked, or when its access token is replaced', async () => {
      const browser = await signInBrowser(t, s.userId);
      const [revoked, rotated] = [await connectApp(t, browser, { clientName: 'Listen Agent' }), await connectApp(t, browser, { clientName: 'Rotating Agent' })];
      const lr = track(await opened(t, revoked.accessToken, 'oauth'));
      const lo = track(await opened(t, rotated.accessToken, 'rotated'));
      expectStreamHead(lr.stream);

      const grants: Array<{ id: string; client: { name: string } }> = (await t.admin.get(`/admin/users/${s.userId}/oauth-grants`).expect(200)).body;
      const grant = grants.find((g) => g.client.name === 'Listen Agent')!;
      expect((await t.admin.delete(`/admin/oauth-grants/${grant.id}`)).status).toBe(204);
      await ended(lr);
      expect(lr.messages()).toEqual([acknowledged('oauth', { toolsListChanged: true }), endedUnauthorized('oauth', APP_ENDED)]);
      expect(lr.stream.response.complete).toBe(true);

      // The other app's stream lives on until its own access token is replaced by a refresh.
      expect(lo.stream.ended).toBe(false);
      expect((await refreshTokens(t, rotated)).status).toBe(200);
      await ended(lo);
      expect(lo.messages()).toEqual([acknowledged('rotated', { toolsListChanged: true }), endedUnauthorized('rotated', APP_ENDED)]);
    });
  });
});

describe('MCP 2026-07-28 subscriptions/listen: keep-alives and bounds', () => {
  let t: McpTestApp;
  let s: Session;
  const open: Listener[] = [];
  const PER_KEY = 2;

  beforeAll(async () => {
    t = await createMcpTestApp({ MCP_LISTEN_KEEPALIVE_MS: '1000', MCP_LISTEN_STREAMS_PER_KEY: String(PER_KEY), MCP_KEY_CONCURRENCY: '1' });
    s = await createSession(t.admin, { lines: ['PHONE_NUMBER'] });
  });
  afterEach(() => {
    for (const listener of open.splice(0)) listener.stream.disconnect();
  });
  afterAll(async () => {
    await t?.close();
  });

  const track = (listener: Listener) => (open.push(listener), listener);
  const newKey = async (): Promise<string> =>
    (await t.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'bounds', channelAccess: { mode: 'ALL' } }).expect(201)).body.key;

  it('sends keep-alive comments after the acknowledgement while nothing else happens', async () => {
    const listener = track(await opened(t, s.apiKey, 'quiet'));
    await waitUntil(() => listener.stream.comments.length >= 2, 'two keep-alives');
    expect(listener.stream.comments.slice(0, 2)).toEqual(['keepalive', 'keepalive']);
    expect(
      listener.stream.text.startsWith(`event: message\ndata: ${JSON.stringify(acknowledged('quiet', { toolsListChanged: true }))}\n\n: keepalive\n\n`),
    ).toBe(true);
    expect(listener.messages()).toEqual([acknowledged('quiet', { toolsListChanged: true })]);
    expect(listener.stream.ended).toBe(false);
  });

  it(`answers a key's stream beyond MCP_LISTEN_STREAMS_PER_KEY (${PER_KEY}) with 429, Retry-After and -32000; a closed stream frees its place`, async () => {
    const key = await newKey();
    const first = track(await opened(t, key, 1));
    track(await opened(t, key, 2));

    const refused = await openListen(t, key, { toolsListChanged: true }, 'third');
    await ended(refused);
    expect(refused.stream.status).toBe(429);
    expect(refused.stream.response.headers['retry-after']).toBe('5');
    expect(refused.stream.response.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(JSON.parse(refused.stream.text)).toEqual({
      jsonrpc: '2.0',
      id: 'third',
      error: {
        code: -32000,
        message: `this API key already has ${PER_KEY} subscriptions/listen streams open here (MCP_LISTEN_STREAMS_PER_KEY): close one first`,
      },
    });

    // The bound is the key's: another key of the same person listens.
    track(await opened(t, await newKey(), 'other key'));

    first.stream.disconnect();
    const fourth = await waitUntil(async () => {
      const attempt = await openListen(t, key, { toolsListChanged: true }, 'fourth');
      if (attempt.stream.status === 200) return track(attempt);
      await ended(attempt);
      return null;
    }, 'a place freed by the closed stream');
    await waitUntil(() => fourth.stream.events.length > 0, 'its acknowledgement');
    expect(fourth.messages()).toEqual([acknowledged('fourth', { toolsListChanged: true })]);
  });

  it('an open stream holds none of its key’s running-call slots (MCP_KEY_CONCURRENCY=1)', async () => {
    const key = await newKey();
    const call = () => modernRpc(t, key, 'tools/call', { name: 'list_webhooks', arguments: {} });
    track(await opened(t, key, 'one'));
    expect((await call()).status).toBe(200);
    // A second listen gets in too (its request needs the slot the first gave back), and a call still runs.
    track(await opened(t, key, 'two'));
    const res = await call();
    expect(res.status).toBe(200);
    expect(res.body.result.structuredContent).toEqual({ endpoints: [] });

    // The control: a request of the key still being sent holds its one slot, and a call is refused.
    const held = await RawConnection.open(await listenOn(t.app.getHttpServer()));
    try {
      held.head('POST', MCP_URL, { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', 'Content-Length': 1000 });
      await waitUntil(async () => (await call()).status === 429, 'the held slot to refuse a call');
    } finally {
      held.destroy();
    }
    await waitUntil(async () => (await call()).status === 200, 'the slot given back');
  });
});

describe('MCP 2026-07-28 subscriptions/listen: shutdown', () => {
  it('ends every open stream with the listen result before the app stops', async () => {
    const t = await createMcpTestApp();
    let closed = false;
    try {
      const s = await createSession(t.admin, { lines: ['PHONE_NUMBER'] });
      const listeners = [await opened(t, s.apiKey, 'bye'), await opened(t, s.apiKey, 9)];
      await t.close();
      closed = true;
      for (const listener of listeners) {
        await ended(listener);
        expect(listener.messages()).toEqual([acknowledged(listener.id, { toolsListChanged: true }), endedGracefully(listener.id)]);
        expect(listener.stream.response.complete).toBe(true);
      }
    } finally {
      if (!closed) await t.close();
    }
  });
});
