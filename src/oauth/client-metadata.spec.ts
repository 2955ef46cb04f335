import { CLIENT_METADATA_MAX_BYTES, clientMetadataOf, ClientMetadataProblem, isLoopbackHost, redirectUriProblem } from './client-metadata';

const REDIRECT = 'http://127.0.0.1:9/callback';

function problemOf(input: Record<string, unknown>, source: 'registration' | 'document' = 'registration'): { field: string; message: string } | null {
  try {
    clientMetadataOf(input, source);
    return null;
  } catch (error) {
    if (!(error instanceof ClientMetadataProblem)) throw error;
    return { field: error.field, message: error.message };
  }
}

describe('clientMetadataOf', () => {
  it('keeps the fields it understands, normalized, and drops the rest', () => {
    expect(
      clientMetadataOf(
        { client_name: 'Agent', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'client_secret_post', jwks: { keys: [] }, extra: 1, client_secret: 's' },
        'registration',
      ),
    ).toEqual({
      client_name: 'Agent',
      redirect_uris: [REDIRECT],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    });
  });

  it('holds a document to a public client and https URIs, with authorization_code as the default grant', () => {
    expect(clientMetadataOf({ redirect_uris: [REDIRECT] }, 'document').grant_types).toEqual(['authorization_code']);
    expect(problemOf({ redirect_uris: [REDIRECT], client_secret: 's' }, 'document')?.field).toBe('client_secret');
    expect(problemOf({ redirect_uris: [REDIRECT], token_endpoint_auth_method: 'private_key_jwt' }, 'document')?.field).toBe('token_endpoint_auth_method');
    expect(problemOf({ redirect_uris: [REDIRECT], logo_uri: 'http://agent.example/logo.png' }, 'document')).toEqual({
      field: 'logo_uri',
      message: 'logo_uri must be an https URL',
    });
    expect(problemOf({ redirect_uris: [REDIRECT], logo_uri: 'http://agent.example/logo.png' }, 'registration')).toBeNull();
  });

  it('counts characters as code points: 200 emoji are a name, 201 are not', () => {
    expect(problemOf({ redirect_uris: [REDIRECT], client_name: '🙂'.repeat(200) })).toBeNull();
    expect(problemOf({ redirect_uris: [REDIRECT], client_name: '🙂'.repeat(201) })).toEqual({
      field: 'client_name',
      message: 'client_name must be at most 200 characters (it has 201)',
    });
  });

  it('bounds the whole metadata, whatever each field holds', () => {
    const uris = Array.from({ length: 5 }, (_, i) => `https://agent.example/${i}/${'x'.repeat(1900)}`);
    expect(problemOf({ redirect_uris: uris })).toEqual({
      field: 'metadata',
      message: expect.stringMatching(new RegExp(`^the client metadata together must be at most ${CLIENT_METADATA_MAX_BYTES} bytes`)),
    });
    expect(problemOf({ redirect_uris: uris.slice(0, 3) })).toBeNull();
  });

  it('keeps application_type native or web as sent, refuses any other, and adds none when absent', () => {
    expect(clientMetadataOf({ redirect_uris: [REDIRECT], application_type: 'native' }, 'registration').application_type).toBe('native');
    expect(clientMetadataOf({ redirect_uris: [REDIRECT], application_type: 'web' }, 'document').application_type).toBe('web');
    expect(clientMetadataOf({ redirect_uris: [REDIRECT] }, 'registration')).not.toHaveProperty('application_type');
    for (const other of ['desktop', 'Native', '', 1, null])
      expect(problemOf({ redirect_uris: [REDIRECT], application_type: other })).toEqual({
        field: 'application_type',
        message: 'application_type must be native or web',
      });
  });

  it('names the redirect URI at fault', () => {
    expect(problemOf({ redirect_uris: [REDIRECT, 'http://agent.example/cb'] })).toEqual({
      field: 'redirect_uris',
      message: 'redirect_uris: http://agent.example/cb must be https, or http on a loopback address (127.0.0.1, [::1], localhost)',
    });
    expect(problemOf({ redirect_uris: [REDIRECT, 5] })).toEqual({ field: 'redirect_uris[1]', message: 'redirect_uris[1] must be a string' });
  });
});

describe('redirectUriProblem', () => {
  it.each([
    ['https://agent.example/cb', null],
    ['http://127.0.0.1:33418/cb', null],
    ['http://[::1]/cb', null],
    ['http://localhost:8080/cb', null],
    ['http://agent.example/cb', 'must be https'],
    ['https://agent.example/cb#x', 'must not have a fragment'],
    ['/cb', 'is not an absolute URL'],
  ])('%s', (uri, problem) => {
    const found = redirectUriProblem(uri);
    if (problem === null) expect(found).toBeNull();
    else expect(found).toContain(problem);
  });
});

describe('isLoopbackHost', () => {
  it.each([
    ['127.0.0.1', true],
    ['127.8.9.10', true],
    ['[::1]', true],
    ['[::ffff:7f00:1]', true],
    ['localhost', true],
    ['LOCALHOST', true],
    ['app.localhost', true],
    ['localhost.', true],
    ['10.0.0.1', false],
    ['[::2]', false],
    ['localhost.example.com', false],
    ['agent.example', false],
  ])('%s: %s', (host, loopback) => {
    expect(isLoopbackHost(host)).toBe(loopback);
  });
});
