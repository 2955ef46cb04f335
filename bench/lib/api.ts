import { randomBytes, randomInt } from 'node:crypto';
import { Pool } from 'undici';

/** JSON over one keep-alive pool; throws on a status >= 300 with the answer's text. */
export class Http {
  readonly pool: Pool;

  constructor(
    readonly baseUrl: string,
    connections = 8,
  ) {
    this.pool = new Pool(baseUrl, { connections, keepAliveTimeout: 30_000 });
  }

  async json<T>(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, token: string, body?: unknown): Promise<T> {
    const res = await this.pool.request({
      method,
      path,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        accept: 'application/json, text/event-stream',
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      headersTimeout: 60_000,
      bodyTimeout: 60_000,
    });
    const text = await res.body.text();
    if (res.statusCode >= 300) throw new Error(`${method} ${path} answered ${res.statusCode}: ${text.slice(0, 300)}`);
    return (text ? JSON.parse(text) : undefined) as T;
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

export interface SeededEndpoint {
  id: string;
  url: string;
  path: string;
  secret: string;
}

export interface SeededUser {
  userId: string;
  apiKey: string;
  endpoints: SeededEndpoint[];
}

let phoneCounter = randomInt(0, 400_000_000);

/** A run-unique E.164 number: lines are +1 5xx…, partners +1 4xx…. */
export function uniquePhone(kind: 'line' | 'partner'): string {
  phoneCounter += 1;
  return `+1${kind === 'line' ? 5 : 4}${String(phoneCounter).padStart(9, '0')}`;
}

/** Everything the benchmark creates goes through the public surfaces: admin REST and the MCP endpoint. */
export class ServiceApi {
  readonly http: Http;
  private rpcId = 1;

  constructor(
    baseUrl: string,
    private readonly adminToken: string,
    readonly ingestToken: string,
  ) {
    this.http = new Http(baseUrl, 16);
  }

  createOrg(name: string, tier: 'STARTER' | 'PRO' | 'POWER' = 'POWER'): Promise<{ id: string }> {
    return this.http.json('POST', '/admin/orgs', this.adminToken, { name, tier });
  }

  createUser(orgId: string, label: string): Promise<{ id: string }> {
    return this.http.json('POST', `/admin/orgs/${orgId}/users`, this.adminToken, {
      email: `${label}.${randomBytes(4).toString('hex')}@bench.example`,
      displayName: label,
      role: 'OWNER',
    });
  }

  createPhoneLine(orgId: string): Promise<{ id: string; address: string }> {
    return this.http.json('POST', `/admin/orgs/${orgId}/lines`, this.adminToken, { type: 'PHONE_NUMBER', address: uniquePhone('line') });
  }

  createEmailLine(orgId: string, address: string): Promise<{ id: string; address: string }> {
    return this.http.json('POST', `/admin/orgs/${orgId}/lines`, this.adminToken, { type: 'EMAIL_ACCOUNT', address });
  }

  addMember(lineId: string, userId: string): Promise<unknown> {
    return this.http.json('PUT', `/admin/lines/${lineId}/members/${userId}`, this.adminToken);
  }

  async createApiKey(userId: string): Promise<string> {
    const key = await this.http.json<{ key: string }>('POST', `/admin/users/${userId}/api-keys`, this.adminToken, {
      name: 'bench',
      channelAccess: { mode: 'ALL' },
    });
    return key.key;
  }

  /** The token of a sign-in link for the user (what the emailed link carries), for signing in as a browser would. */
  async signInToken(userId: string): Promise<string> {
    const link = await this.http.json<{ url: string }>('POST', `/admin/users/${userId}/sign-in-links`, this.adminToken);
    return new URL(link.url).searchParams.get('token')!;
  }

  /** Signs the user in as a browser does (a sign-in link's token POSTed): the session cookie (`name=value`). */
  async signInCookie(userId: string): Promise<string> {
    const token = await this.signInToken(userId);
    const res = await this.http.pool.request({
      method: 'POST',
      path: '/sign-in/link',
      headers: { origin: this.http.baseUrl, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token }).toString(),
    });
    await res.body.text();
    const cookie = String(res.headers['set-cookie'] ?? '').split(';')[0];
    if (res.statusCode !== 303 || !cookie) throw new Error(`sign-in answered ${res.statusCode}`);
    return cookie;
  }

  /** Sets the org's send policy (issue 45) through the admin API; false when this build has none (404). */
  async setSendPolicy(orgId: string, policy: Record<string, unknown>): Promise<boolean> {
    try {
      await this.http.json('PUT', `/admin/orgs/${orgId}/send-policy`, this.adminToken, policy);
      return true;
    } catch (error) {
      if (/\b404\b/.test((error as Error).message)) return false;
      throw error;
    }
  }

  /** tools/call over raw JSON-RPC; throws on a protocol error or a tool error. */
  async tool<T>(apiKey: string, name: string, args: Record<string, unknown>): Promise<T> {
    const answer = await this.http.json<{
      result?: { structuredContent?: T; isError?: boolean; content?: Array<{ text: string }> };
      error?: { message: string };
    }>('POST', '/api/mcp', apiKey, { jsonrpc: '2.0', id: this.rpcId++, method: 'tools/call', params: { name, arguments: args } });
    if (answer.error) throw new Error(`${name}: JSON-RPC error ${answer.error.message}`);
    if (!answer.result || answer.result.isError) throw new Error(`${name} failed: ${answer.result?.content?.[0]?.text}`);
    return answer.result.structuredContent as T;
  }

  async registerWebhook(apiKey: string, url: string, mode: 'concise' | 'verbose' = 'concise'): Promise<SeededEndpoint> {
    const result = await this.tool<{ endpoint: { id: string; url: string }; secret: string }>(apiKey, 'register_webhook', {
      url,
      events: ['message.received'],
      mode,
      ...(mode === 'verbose' ? { messageHistoryCount: 10 } : {}),
    });
    return { id: result.endpoint.id, url, path: new URL(url).pathname, secret: result.secret };
  }

  setEndpointStatus(apiKey: string, endpointId: string, status: 'active' | 'disabled'): Promise<unknown> {
    return this.tool(apiKey, 'update_webhook', { endpointId, status });
  }

  async ready(): Promise<boolean> {
    const res = await this.http.pool.request({ method: 'GET', path: '/ready' });
    await res.body.text();
    return res.statusCode === 200;
  }

  close(): Promise<void> {
    return this.http.close();
  }
}

/**
 * One org, one phone line, `users` users who are all members of it, each with an API key, and
 * `urls.length` endpoints registered through MCP register_webhook, dealt round-robin to the users.
 */
export async function seedLineWithEndpoints(
  api: ServiceApi,
  options: { orgId?: string; label: string; users: number; urls: string[]; mode: 'concise' | 'verbose' },
): Promise<{ orgId: string; line: { id: string; address: string }; users: SeededUser[]; endpoints: SeededEndpoint[] }> {
  const orgId = options.orgId ?? (await api.createOrg(`bench ${options.label}`)).id;
  const line = await api.createPhoneLine(orgId);
  const users: SeededUser[] = [];
  for (let i = 0; i < options.users; i += 1) {
    const user = await api.createUser(orgId, `${options.label}-u${i}`);
    await api.addMember(line.id, user.id);
    users.push({ userId: user.id, apiKey: await api.createApiKey(user.id), endpoints: [] });
  }
  const endpoints: SeededEndpoint[] = [];
  for (let i = 0; i < options.urls.length; i += 1) {
    const user = users[i % users.length];
    const endpoint = await api.registerWebhook(user.apiKey, options.urls[i], options.mode);
    user.endpoints.push(endpoint);
    endpoints.push(endpoint);
  }
  return { orgId, line, users, endpoints };
}
