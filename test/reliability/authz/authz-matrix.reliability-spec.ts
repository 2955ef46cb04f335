import { createMessagingTestApp, MessagingTestApp } from '../../support/messaging-hooks';
import { accessEnded } from './access-ended';
import { agentRoutes } from './agent-routes';
import { foreignCallers } from './foreign-callers';
import { inboxPages } from './inbox-pages';
import { linesKeyOnWebhooks } from './lines-key-webhooks';
import { eventsFeed } from './events-feed';
import { createVictim, Victim } from './matrix';
import { MatrixReport } from './report';
import { oauthEndpoints } from './oauth-endpoints';
import { oauthTokens } from './oauth-tokens';
import { readOnlyKey } from './read-only-key';

/**
 * Issue 6: "An authorization matrix: every tool × another user's ids, a LINES key outside its
 * lines, MEMBER vs the roles a tool needs, a revoked key: nothing leaks, nothing changes", grown
 * by issues 10, 16, 30, 31 and 43. One case per `it`, its body in a module of this folder named after
 * it; the cases share one app, the victim's data (matrix.ts) and one row of docs/RELIABILITY.md
 * (report.ts: the same row, names and figures, as when the matrix was a single test). Every tool
 * call a case judges is made in both eras of /api/mcp, the legacy JSON-RPC request and then the
 * same call as a 2026-07-28 request (matrix.ts, callInBothEras), which must be refused alike.
 *
 * The whole matrix (and its row):
 *   npx jest -c test/reliability/jest.config.js test/reliability/authz --runInBand
 * One case, by a word of its name (the row is left as it was; the figures are printed):
 *   npx jest -c test/reliability/jest.config.js test/reliability/authz --runInBand -t 'OAuth'
 * Words that pick one case each: 'foreign callers', 'read-only key', 'LINES key', 'removed member',
 * 'permission set', 'OAuth access', 'OAuth endpoints', 'inbox pages', 'MCP Events'. The first three share the victim's data (planted once, when one of
 * them runs); the others plant their own.
 */
describe('reliability: authorization matrix', () => {
  let t: MessagingTestApp;
  const report = new MatrixReport();

  beforeAll(async () => {
    t = await createMessagingTestApp();
  });
  afterAll(async () => {
    report.finish();
    await t?.close();
  });

  describe("a victim's data", () => {
    let victim: Victim;
    beforeAll(async () => {
      victim = await createVictim(t);
    });

    it('every tool × five foreign callers with the victim ids: nothing leaks, nothing changes', () =>
      report.run('foreign callers', () => foreignCallers(t, victim, report)));

    it("the victim's read-only key: every tool needing send or webhooks refused for the permission", () =>
      report.run('read-only key', () => readOnlyKey(t, victim, report)));

    it("the victim's LINES key on its endpoints of four scopes: only its line's answers, the others as unknown ids", () =>
      report.run('LINES key', () => linesKeyOnWebhooks(t, victim, report)));
  });

  it('a removed member and a deleted line get nothing of the line through the delivery tools and pages', () =>
    report.run('access ended', () => accessEnded(t, report)));

  it('the agent REST routes × keys of each permission set and foreign callers', () => report.run('agent routes', () => agentRoutes(t, report)));

  it('OAuth access tokens with one line and Read only × every tool; tokens on the agent REST routes', () =>
    report.run('OAuth tokens', () => oauthTokens(t, report)));

  it('the OAuth endpoints × requests without credentials: never-approved documents not fetched, bad bodies and registrations refused with their OAuth error', () =>
    report.run('OAuth endpoints', () => oauthEndpoints(t, report)));

  it('the inbox pages and live stream × callers who may not see line A (another member, another org, removed, line deleted): nothing leaks or changes', () =>
    report.run('inbox pages', () => inboxPages(t, report)));

  it('the MCP Events surfaces (events/poll, events/stream, events/subscribe in both eras; GET /api/events) × callers outside line A: none gets its event; without webhooks refused', () =>
    report.run('events', () => eventsFeed(t, report)));
});
