import { ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { createTestApp, TestApp } from '../support/app';
import { freePort, oauthBrowser } from '../support/oauth';
import { createSession, Session } from '../support/session';
import { waitUntil } from '../support/wait';

const ROOT = resolve(__dirname, '../..');

/**
 * docs/mcp.md's runnable OAuth client (examples/mcp-oauth-client.ts), run as a newcomer runs it:
 * a separate process with the official v2 SDK against the running service. It prints the
 * authorization address; the person signs in and allows in the browser (here over HTTP, as the
 * consent tests do); the browser is sent back to the example's loopback callback; the example
 * finishes the sign-in and lists what the app may use.
 */
describe('examples/mcp-oauth-client.ts', () => {
  let t: TestApp;
  let base: string;
  let s: Session;
  let child: ChildProcess | undefined;
  const browser = oauthBrowser(() => ({ t, base, userId: s.userId }));

  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    t = await createTestApp({ env: { PUBLIC_BASE_URL: base } });
    await t.app.listen(port, '127.0.0.1');
    s = await createSession(t.admin, { lines: ['PHONE_NUMBER'] });
  });
  afterAll(async () => {
    child?.kill();
    await t?.close();
  });

  it('connects by OAuth on 2026-07-28 once the person allows it, and lists the tools and lines the app may use', async () => {
    const callbackPort = await freePort();
    let stdout = '';
    let stderr = '';
    child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', 'examples/mcp-oauth-client.ts', `${base}/api/mcp`], {
      cwd: ROOT,
      env: { ...process.env, CALLBACK_PORT: String(callbackPort) },
    });
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const exited = new Promise<number | null>((done) => child!.once('exit', (code) => done(code)));

    const address = await waitUntil(
      () => /^(http:\/\/\S+\/oauth\/authorize\?\S+)$/m.exec(stdout)?.[1],
      () => `the authorization address; printed: ${stdout}${stderr}`,
      {
        timeoutMs: 60_000,
      },
    );
    const asked = new URL(address);
    expect(asked.searchParams.get('resource')).toBe(`${base}/api/mcp`);
    expect(asked.searchParams.get('code_challenge_method')).toBe('S256');
    expect(asked.searchParams.get('redirect_uri')).toBe(`http://127.0.0.1:${callbackPort}/callback`);

    const consent = await browser.browserTo(address);
    expect(consent.page).toContain('MCP OAuth example');
    const allowed = await browser.consent(consent, { decision: 'allow', access: 'ALL', 'permissions-shown': 'on', 'permission-read': 'on' });
    expect(allowed.status).toBe(303);
    const back = new URL(allowed.location);
    expect(back.searchParams.get('iss')).toBe(base);
    const answer = await fetch(back);
    expect(answer.status).toBe(200);
    expect(await answer.text()).toBe('Connected: you can close this tab.\n');

    expect(await exited).toBe(0);
    expect(stderr).toBe('');
    const tools = /Connected \(modern era\)\. Tools this app may call: (.+)$/m.exec(stdout)?.[1].split(', ');
    expect(tools).toEqual(expect.arrayContaining(['list_phone_numbers', 'list_threads']));
    expect(tools).not.toContain('send_sms'); // read only, as allowed
    expect(stdout).toContain(`Phone lines: ${s.lines[0].address}`);
  }, 120_000);
});
