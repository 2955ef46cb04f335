import { randomUUID } from 'node:crypto';
import { createTestApp, TestApp } from '../support/app';
import { runScript, SeedRun } from '../support/seed-process';
import { privateQueuePrefix } from '../support/test-env';

const ORIGIN = 'http://127.0.0.1:3000';

/** `node dist/src/web/sign-in-link-cli.js <args>` as an operator runs it (under ts-node here), on the test's database; killed after 60 s. */
function runCli(args: string[]): Promise<SeedRun> {
  return runScript(
    'src/web/sign-in-link-cli.ts',
    args,
    { ...process.env, QUEUE_PREFIX: privateQueuePrefix('sign-in-cli'), TS_NODE_TRANSPILE_ONLY: '1' },
    60_000,
  );
}

/** The sign-in link command (docs/web.md; scripts/dev.sh prints one for the demo owner). */
describe('sign-in-link-cli', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('prints one sign-in link for the user with the email (any letter case), which signs them in', async () => {
    const org = await t.admin.post('/admin/orgs', { name: 'CLI org', tier: 'PRO' }).expect(201);
    const email = `cli-${randomUUID()}@web.example`;
    await t.admin.post(`/admin/orgs/${org.body.id}/users`, { email, displayName: 'Cleo', role: 'OWNER' }).expect(201);

    const run = await runCli([email.toUpperCase()]);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toMatch(/^http:\/\/127\.0\.0\.1:3000\/sign-in\/link\?token=sil_[A-Za-z0-9_-]+\n$/);
    const token = new URL(run.stdout.trim()).searchParams.get('token')!;
    const signedIn = await t.http().post('/sign-in/link').set('Origin', ORIGIN).type('form').send({ token }).expect(303);
    expect(String(signedIn.headers['set-cookie'][0])).toMatch(/=/);
  }, 90_000);

  it('says so and exits 1 for an email no user has, and without an email', async () => {
    const unknown = `nobody-${randomUUID()}@web.example`;
    expect(await runCli([unknown])).toEqual({ code: 1, stdout: '', stderr: `sign-in link: no user has the email ${unknown}\n` });
    expect(await runCli([])).toEqual({ code: 1, stdout: '', stderr: 'sign-in link: usage: sign-in-link-cli <email>\n' });
  }, 120_000);
});
