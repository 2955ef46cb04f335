import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { MessagingTestApp } from '../../support/messaging-hooks';
import { tableChecksums } from './matrix';
import { FIGURE, MatrixReport } from './report';

const REDIRECT = 'http://127.0.0.1:9/callback';

/**
 * The OAuth protocol endpoints × what anybody may send them without credentials (docs/mcp.md,
 * "Connecting Claude, ChatGPT and other OAuth clients"): valid metadata documents at URLs no person
 * approved, named at the token and revocation endpoints (never fetched: invalid_client at once);
 * failing documents at the public authorization page (one text whatever failed); oversized,
 * compressed, malformed and repeated bodies; registrations past the field bounds. Every answer is
 * its own OAuth error, never a 5xx; no table changes.
 */
export async function oauthEndpoints(t: MessagingTestApp, report: MatrixReport): Promise<void> {
  const problems: string[] = [];
  // A client's web server on loopback (the app is in development with 127.0.0.0/8 allowed): it
  // serves a valid document at any path and counts what it is asked for.
  let fetches = 0;
  const documents = createServer((req, res) => {
    fetches += 1;
    const url = `${origin}${req.url}`;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ client_id: url, client_name: 'Never approved', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' }));
  });
  await new Promise<void>((resolve) => documents.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(documents.address() as AddressInfo).port}`;
  try {
    const before = JSON.stringify(await tableChecksums(t));
    const answers: Array<{ what: string; status: number; body: unknown; want: { status: number; body: unknown } }> = [];
    const expectAnswer = (what: string, res: { status: number; body: unknown }, status: number, body: unknown) =>
      answers.push({ what, status: res.status, body: res.body, want: { status, body } });

    // 200 token and 20 revocation requests naming distinct document URLs nobody approved.
    const invalidClient = { error: 'invalid_client', error_description: 'Invalid client_id' };
    const urls = Array.from({ length: 200 }, () => `${origin}/clients/${randomBytes(6).toString('hex')}/metadata.json`);
    for (let i = 0; i < urls.length; i += 25) {
      const batch = await Promise.all(
        urls.slice(i, i + 25).map((clientId) =>
          t
            .http()
            .post('/oauth/token')
            .type('form')
            .send({ grant_type: 'refresh_token', client_id: clientId, refresh_token: `csr_${'0'.repeat(48)}` }),
        ),
      );
      batch.forEach((res, j) => expectAnswer(`token, client_id ${urls[i + j]}`, res, 400, invalidClient));
    }
    for (const clientId of urls.slice(0, 20)) {
      expectAnswer('revocation', await t.http().post('/oauth/revoke').type('form').send({ client_id: clientId, token: 'csr_x' }), 400, invalidClient);
    }
    const fetchedByTokenEndpoints = fetches;

    // Bodies.
    const big = 'a'.repeat(150 * 1024);
    const tooLarge = (limit: number) => ({ error: 'invalid_request', error_description: `the request body is larger than ${limit} bytes` });
    expectAnswer('token, 150 KB', await t.http().post('/oauth/token').type('form').send(`grant_type=refresh_token&pad=${big}`), 413, tooLarge(8192));
    expectAnswer('revocation, 150 KB', await t.http().post('/oauth/revoke').type('form').send(`token=${big}`), 413, tooLarge(8192));
    const register = (body: string | object) => t.http().post('/oauth/register').set('Content-Type', 'application/json').send(body);
    expectAnswer('registration, 150 KB', await register(JSON.stringify({ redirect_uris: [REDIRECT], client_name: big })), 413, tooLarge(16384));
    expectAnswer(
      'registration, 90 KB client_name',
      await register(JSON.stringify({ redirect_uris: [REDIRECT], client_name: 'n'.repeat(90 * 1024) })),
      413,
      tooLarge(16384),
    );
    expectAnswer('registration, bad JSON', await register('{"redirect_uris": ['), 400, {
      error: 'invalid_request',
      error_description: 'the request body is not valid JSON',
    });
    expectAnswer(
      'registration, gzip',
      await t
        .http()
        .post('/oauth/register')
        .set('Content-Type', 'application/json')
        .set('Content-Encoding', 'gzip')
        .send(gzipSync(JSON.stringify({ redirect_uris: [REDIRECT] }))),
      415,
      { error: 'invalid_request', error_description: 'Content-Encoding gzip is not accepted: send the request body uncompressed' },
    );
    expectAnswer('token, client_id twice', await t.http().post('/oauth/token').type('form').send('client_id=a&client_id=b'), 400, {
      error: 'invalid_request',
      error_description: 'the field "client_id" is given more than once',
    });
    // Registrations past the field bounds.
    const metadata = (description: string) => ({ error: 'invalid_client_metadata', error_description: description });
    expectAnswer(
      'registration, 10 KB client_name',
      await register({ redirect_uris: [REDIRECT], client_name: 'n'.repeat(10_000) }),
      400,
      metadata('client_name must be at most 200 characters (it has 10000)'),
    );
    expectAnswer(
      'registration, 11 redirect URIs',
      await register({ redirect_uris: Array(11).fill(REDIRECT) }),
      400,
      metadata('redirect_uris must list between 1 and 10 URLs'),
    );
    expectAnswer(
      'registration, application_type desktop',
      await register({ redirect_uris: [REDIRECT], application_type: 'desktop' }),
      400,
      metadata('application_type must be native or web'),
    );

    // The public authorization page: failing documents and an unknown id read alike, and say no reason.
    const pages = new Set<string>();
    for (const clientId of [
      `http://127.0.0.1:1/clients/metadata.json`,
      'http://10.1.2.3/clients/metadata.json',
      `${origin}/`,
      randomBytes(16).toString('hex'),
    ]) {
      const res = await t.http().get('/oauth/authorize').query({ client_id: clientId, response_type: 'code', redirect_uri: REDIRECT });
      if (res.status !== 400) problems.push(`authorization page for ${clientId}: HTTP ${res.status}`);
      pages.add(/<main[^>]*>([\s\S]*)<\/main>/.exec(res.text)?.[1] ?? res.text);
    }
    if (pages.size !== 1) problems.push(`the public authorization page told ${pages.size} refusals apart`);
    if ([...pages][0]?.match(/ECONNREFUSED|10\.1\.2\.3|private|must have a path|registered here/))
      problems.push('the public authorization page named a reason');

    const changed = JSON.stringify(await tableChecksums(t)) !== before;
    let asWanted = 0;
    let serverErrors = 0;
    for (const a of answers) {
      if (a.status >= 500) serverErrors += 1;
      if (a.status === a.want.status && JSON.stringify(a.body) === JSON.stringify(a.want.body)) asWanted += 1;
      else problems.push(`${a.what}: HTTP ${a.status} ${JSON.stringify(a.body).slice(0, 200)}, want ${a.want.status} ${JSON.stringify(a.want.body)}`);
    }
    if (fetchedByTokenEndpoints > 0) problems.push(`the token and revocation endpoints fetched ${fetchedByTokenEndpoints} documents`);
    if (changed) problems.push('a table CHANGED');

    report.badInputs(
      'OAuth endpoints',
      `${answers.length} OAuth requests without credentials: 220 naming never-approved document URLs at /oauth/token and /oauth/revoke, 150 KB / compressed / malformed / repeated bodies, registrations past the field bounds; 4 failing client_ids at the public authorization page`,
    );
    report.figure(
      FIGURE.oauthEndpoints,
      `${answers.length} / ${asWanted} / ${serverErrors} / ${fetchedByTokenEndpoints} / ${pages.size} / ${changed ? 'yes' : 'no'}`,
    );
    report.note('OAuth endpoints', ...problems.slice(0, 10));
    expect(problems).toEqual([]);
  } finally {
    await new Promise<void>((resolve) => documents.close(() => resolve()));
  }
}
