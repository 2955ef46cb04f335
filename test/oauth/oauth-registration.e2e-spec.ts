import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import {
  CLIENT_METADATA_MAX_BYTES,
  CLIENT_NAME_MAX_LENGTH,
  CONTACT_MAX_LENGTH,
  CONTACTS_MAX,
  REDIRECT_URIS_MAX,
  SCOPE_MAX_LENGTH,
  SHORT_TEXT_MAX_LENGTH,
  URI_MAX_LENGTH,
} from '../../src/oauth/client-metadata';
import { OAUTH_REGISTRATION_LIMIT } from '../../src/oauth/oauth-routes';
import { OAuthRepository } from '../../src/oauth/oauth.repository';
import { createTestApp, TestApp } from '../support/app';
import { REDIRECT } from '../support/oauth';

/**
 * Dynamic Client Registration without sign-in stores only what the service understands, each field
 * bounded and the whole at most CLIENT_METADATA_MAX_BYTES (docs/mcp.md, "Registration metadata"):
 * anything else is refused with invalid_client_metadata naming the field, or dropped when the
 * service does not understand it. Before, a 90 KB client_name was stored.
 */
describe('OAuth Dynamic Client Registration: bounded metadata', () => {
  let t: TestApp;
  let db: DataSource;
  beforeAll(async () => {
    t = await createTestApp({ env: { OAUTH_REGISTER_RATE_LIMIT: '1000' } });
    db = t.app.get(DataSource);
  });
  afterAll(async () => {
    await t?.close();
  });

  /** A registration with a name of its own (to find its row), `fields` over a valid one. */
  function register(fields: Record<string, unknown>) {
    const name = `Agent ${randomBytes(4).toString('hex')}`;
    return {
      name,
      res: t
        .http()
        .post('/oauth/register')
        .send({ client_name: name, redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none', ...fields }),
    };
  }

  async function rowsNamed(name: string): Promise<number> {
    const [{ count }] = await db.query(`SELECT count(*)::int AS count FROM oauth_clients WHERE client_name = $1`, [name]);
    return count;
  }

  async function clients(): Promise<number> {
    const [{ count }] = await db.query(`SELECT count(*)::int AS count FROM oauth_clients`);
    return count;
  }

  /** Refused with invalid_client_metadata and this description; nothing stored. */
  async function refused(fields: Record<string, unknown>, description: string): Promise<void> {
    const before = await clients();
    const answer = await register(fields).res;
    expect({ status: answer.status, body: answer.body }).toEqual({ status: 400, body: { error: 'invalid_client_metadata', error_description: description } });
    expect(answer.headers['cache-control']).toBe('no-store');
    expect(await clients()).toBe(before);
  }

  it('a 90 KB client_name is refused by the body limit (413), a 10 KB one by the field rule (400 naming client_name); neither is stored', async () => {
    const huge = 'n'.repeat(90 * 1024);
    const tooBig = await t
      .http()
      .post('/oauth/register')
      .send({ client_name: huge, redirect_uris: [REDIRECT] });
    expect({ status: tooBig.status, body: tooBig.body }).toEqual({
      status: 413,
      body: { error: 'invalid_request', error_description: `the request body is larger than ${OAUTH_REGISTRATION_LIMIT} bytes` },
    });
    expect(await rowsNamed(huge)).toBe(0);
    await refused({ client_name: 'n'.repeat(10_000) }, `client_name must be at most ${CLIENT_NAME_MAX_LENGTH} characters (it has 10000)`);
  });

  it('a client_name of 200 characters (emoji count one) is stored and answered as given; 201 is refused', async () => {
    const name = `${'é'.repeat(CLIENT_NAME_MAX_LENGTH - 1)}🙂`;
    const res = await t
      .http()
      .post('/oauth/register')
      .send({ client_name: name, redirect_uris: [REDIRECT] });
    expect(res.status).toBe(201);
    expect(res.body.client_name).toBe(name);
    expect(await rowsNamed(name)).toBe(1);
    await refused({ client_name: `${name}x` }, `client_name must be at most ${CLIENT_NAME_MAX_LENGTH} characters (it has 201)`);
  });

  it('bounds every field, naming it', async () => {
    const long = (n: number) => 'x'.repeat(n);
    const uri = (n: number) => `https://agent.example/${long(n - 'https://agent.example/'.length)}`;
    await refused({ redirect_uris: Array(REDIRECT_URIS_MAX + 1).fill(REDIRECT) }, `redirect_uris must list between 1 and ${REDIRECT_URIS_MAX} URLs`);
    await refused({ redirect_uris: [] }, `redirect_uris must list between 1 and ${REDIRECT_URIS_MAX} URLs`);
    await refused({ redirect_uris: [uri(URI_MAX_LENGTH + 1)] }, `redirect_uris[0] must be at most ${URI_MAX_LENGTH} characters (it has ${URI_MAX_LENGTH + 1})`);
    await refused({ logo_uri: uri(URI_MAX_LENGTH + 1) }, `logo_uri must be at most ${URI_MAX_LENGTH} characters (it has ${URI_MAX_LENGTH + 1})`);
    await refused({ client_uri: 'javascript:alert(1)' }, 'client_uri must be an http or https URL');
    await refused({ policy_uri: 'not a url' }, 'policy_uri must be an absolute URL');
    await refused({ scope: long(SCOPE_MAX_LENGTH + 1) }, `scope must be at most ${SCOPE_MAX_LENGTH} characters (it has ${SCOPE_MAX_LENGTH + 1})`);
    await refused({ contacts: Array(CONTACTS_MAX + 1).fill('dev@agent.example') }, `contacts must list at most ${CONTACTS_MAX} addresses`);
    await refused(
      { contacts: [long(CONTACT_MAX_LENGTH + 1)] },
      `contacts[0] must be at most ${CONTACT_MAX_LENGTH} characters (it has ${CONTACT_MAX_LENGTH + 1})`,
    );
    await refused(
      { software_id: long(SHORT_TEXT_MAX_LENGTH + 1) },
      `software_id must be at most ${SHORT_TEXT_MAX_LENGTH} characters (it has ${SHORT_TEXT_MAX_LENGTH + 1})`,
    );
    await refused(
      { software_version: long(SHORT_TEXT_MAX_LENGTH + 1) },
      `software_version must be at most ${SHORT_TEXT_MAX_LENGTH} characters (it has ${SHORT_TEXT_MAX_LENGTH + 1})`,
    );
    await refused({ token_endpoint_auth_method: 7 }, 'token_endpoint_auth_method must be a string');
    await refused({ grant_types: ['client_credentials'] }, 'grant_types: only authorization_code and refresh_token are supported');
    await refused({ response_types: ['token'] }, 'response_types: only code is supported');
    await refused({ client_name: 42 }, 'client_name must be a string');
    await refused({ client_name: '   ' }, 'client_name must not be blank');
    await refused({ client_name: 'Trusted\u0000App' }, 'client_name must be well-formed text without control characters');
    await refused({ client_name: 'Evil \u202eedualC' }, 'client_name must not contain bidirectional formatting characters');
  });

  it('bounds the whole: fields within their bounds that add up to more than 8 KB are refused', async () => {
    const uris = Array.from({ length: 5 }, (_, i) => `https://agent.example/${i}/${'x'.repeat(URI_MAX_LENGTH - 30)}`);
    const { name, res } = register({ redirect_uris: uris });
    const answer = await res;
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({
      error: 'invalid_client_metadata',
      error_description: expect.stringMatching(
        new RegExp(`^the client metadata together must be at most ${CLIENT_METADATA_MAX_BYTES} bytes of JSON \\(it is \\d+\\)$`),
      ),
    });
    expect(await rowsNamed(name)).toBe(0);
  });

  it('drops what it does not understand (unknown fields, jwks, a software statement, a client_id or secret of its own) and keeps the rest', async () => {
    const { name, res } = register({
      client_uri: 'https://agent.example',
      contacts: ['dev@agent.example'],
      software_id: 'agent',
      software_version: '1.2.3',
      scope: 'read send',
      token_endpoint_auth_method: 'client_secret_basic',
      anything: { nested: ['x'.repeat(1000)] },
      jwks: { keys: [{ kty: 'RSA', n: 'x'.repeat(2000) }] },
      jwks_uri: 'https://agent.example/jwks.json',
      software_statement: 'eyJ.x.y',
      client_id: 'chosen-by-me',
      client_secret: 'shh',
    });
    const answer = await res.expect(201);
    const expected = {
      client_name: name,
      redirect_uris: [REDIRECT],
      client_uri: 'https://agent.example',
      contacts: ['dev@agent.example'],
      software_id: 'agent',
      software_version: '1.2.3',
      scope: 'read send',
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    };
    expect(answer.body).toEqual({ ...expected, client_id: expect.stringMatching(/^[0-9a-f-]{36}$/), client_id_issued_at: expect.any(Number) });
    const [row] = await db.query(`SELECT client_id, metadata FROM oauth_clients WHERE client_name = $1`, [name]);
    expect(row.client_id).toBe(answer.body.client_id);
    expect(row.metadata).toEqual(expected);
  });

  it('keeps application_type (native or web, MCP 2026-07-28) as sent and answers it; any other value is invalid_client_metadata', async () => {
    for (const type of ['native', 'web']) {
      const { name, res } = register({ application_type: type });
      const answer = await res.expect(201);
      expect(answer.body.application_type).toBe(type);
      const [row] = await db.query(`SELECT metadata FROM oauth_clients WHERE client_name = $1`, [name]);
      expect(row.metadata.application_type).toBe(type);
    }
    const { name, res } = register({});
    expect((await res.expect(201)).body).not.toHaveProperty('application_type');
    const [row] = await db.query(`SELECT metadata FROM oauth_clients WHERE client_name = $1`, [name]);
    expect(row.metadata).not.toHaveProperty('application_type');
    await refused({ application_type: 'desktop' }, 'application_type must be native or web');
    await refused({ application_type: ['native'] }, 'application_type must be native or web');
  });

  it('a registration that fails for the service, not the client, is 500 server_error as the SDK answered it (and nothing else is said)', async () => {
    const failing = jest.spyOn(OAuthRepository.prototype, 'insertClient').mockRejectedValueOnce(new Error('connection terminated unexpectedly'));
    try {
      const res = await register({}).res;
      expect({ status: res.status, body: res.body }).toEqual({ status: 500, body: { error: 'server_error', error_description: 'Internal Server Error' } });
      expect(res.headers['access-control-allow-origin']).toBe('*');
    } finally {
      failing.mockRestore();
    }
  });

  it('refuses a body that is not a JSON object; answers CORS preflights and 405 to other methods, as the SDK did', async () => {
    const array = await t
      .http()
      .post('/oauth/register')
      .send([{ redirect_uris: [REDIRECT] }]);
    expect({ status: array.status, body: array.body }).toEqual({
      status: 400,
      body: { error: 'invalid_client_metadata', error_description: 'the registration must be a JSON object' },
    });
    const preflight = await t
      .http()
      .options('/oauth/register')
      .set('Origin', 'https://app.example')
      .set('Access-Control-Request-Method', 'POST')
      .set('Access-Control-Request-Headers', 'content-type');
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe('*');
    expect(preflight.headers['access-control-allow-methods']).toBe('POST');
    expect(preflight.headers['access-control-allow-headers']).toBe('content-type');
    const get = await t.http().get('/oauth/register');
    expect(get.status).toBe(405);
    expect(get.headers.allow).toBe('POST');
    expect(get.body.error).toBe('method_not_allowed');
  });
});
