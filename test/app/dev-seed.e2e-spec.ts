import { createMessagingTestApp, MessagingTestApp } from '../support/messaging-hooks';
import { runSeed, seedDatabase } from '../support/seed-process';
import { privateQueuePrefix } from '../support/test-env';
import { waitUntil } from '../support/wait';
import { PageBrowser, signInBrowser } from '../support/web';

jest.setTimeout(180_000);

/**
 * The development seed (`npm run seed`, run by `npm run dev`) as a newcomer meets it: a real seed
 * process on a database of this file's own, then the app on that database, and the demo owner signed
 * in: the inbox has conversations, one with an agent's draft waiting on Approvals, one with a label,
 * an email whose calendar invitation shows on its thread. A second run seeds nothing.
 */
describe('npm run seed: the demo inbox', () => {
  let database: Awaited<ReturnType<typeof seedDatabase>>;
  let t: MessagingTestApp | undefined;
  let owner: PageBrowser;
  // The seed and the app share a queue prefix, as `npm run dev` runs them: the app's worker extracts what the seed stored.
  const QUEUE_PREFIX = privateQueuePrefix('dev-seed');

  beforeAll(async () => {
    database = await seedDatabase('dev_seed');
  });
  afterAll(async () => {
    await t?.close();
    await database?.drop();
  });

  const get = (path: string) => t!.http().get(path).set('Cookie', owner.cookie).expect(200);

  it('seeds the demo org with three conversations and a draft awaiting approval, printed in its summary', async () => {
    const run = await runSeed(database.url, { QUEUE_PREFIX });
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toContain('  inbox      3 conversations, 1 agent draft awaiting approval (sign in to see them)');

    t = await createMessagingTestApp({ DATABASE_URL: database.url, QUEUE_PREFIX });
    const [{ id }] = await t.db.query(`SELECT id FROM users WHERE email = 'owner@demo.example'`);
    owner = await signInBrowser(t, id);

    const list = (await get('/conversations')).text;
    expect(list.match(/class="thread-row/g)).toHaveLength(3);
    for (const text of ['Ada Lovelace', 'Do you deliver on Sundays?', 'Quarterly review', 'Awaiting approval', '>delivery<']) expect(list).toContain(text);

    const approvals = (await get('/approvals')).text;
    expect(approvals).toContain('drafted by Front desk');
    expect(approvals).toContain('Yes, a table for two at 8 is free tonight. Shall I reserve it for you?');

    const [email] = await t.db.query(`SELECT t.id FROM threads t JOIN lines l ON l.id = t.line_id WHERE l.address = 'inbox@demo.example'`);
    const thread = await waitUntil(async () => {
      const html = (await get(`/conversations/${email.id}`)).text;
      return html.includes('<dt>Invitation</dt>') && html;
    }, "the email thread to show the invitation (extracted by the app's worker)");
    expect(thread).toContain('Quarterly review');
    expect(thread).toContain('maria@partner.example');
  });

  it('a second run leaves a seeded database alone', async () => {
    const before = await t!.db.query(`SELECT count(*)::int AS n FROM messages`);
    const run = await runSeed(database.url, { QUEUE_PREFIX });
    expect(run).toMatchObject({ code: 0 });
    expect(run.stdout).toContain('seed: the database already has 1 org(s); nothing seeded');
    expect(await t!.db.query(`SELECT count(*)::int AS n FROM messages`)).toEqual(before);
  });
});
