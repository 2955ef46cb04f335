import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { createMcpTestApp, McpTestApp, rpc } from '../support/mcp';
import { modernRpc } from '../support/mcp-modern';
import { createSession, Session } from '../support/session';

const SNAPSHOT = resolve(__dirname, '../fixtures/tools-list.json');

/**
 * tools/list as an OWNER's full key sees it, on both protocol revisions, byte for byte against the
 * committed snapshot: a restructure of the code behind the tools must not change what an agent
 * reads. A deliberate change of a tool rewrites the snapshot with UPDATE_TOOLS_SNAPSHOT=1 and shows
 * in review.
 */
describe('tools/list stays byte-identical', () => {
  let t: McpTestApp;
  let s: Session;

  beforeAll(async () => {
    t = await createMcpTestApp();
    s = await createSession(t.admin, { tier: 'POWER' });
  });
  afterAll(() => t.close());

  it('answers the committed list of tools on 2025-11-25 and on 2026-07-28', async () => {
    const legacy = await rpc(t, s.apiKey, 'tools/list');
    const modern = await modernRpc(t, s.apiKey, 'tools/list');
    expect(legacy.status).toBe(200);
    expect(modern.status).toBe(200);
    const text = `${JSON.stringify(legacy.body.result.tools, null, 1)}\n`;
    if (process.env.UPDATE_TOOLS_SNAPSHOT === '1') writeFileSync(SNAPSHOT, text);
    expect(text).toBe(readFileSync(SNAPSHOT, 'utf8'));
    expect(JSON.stringify(modern.body.result.tools)).toBe(JSON.stringify(legacy.body.result.tools));
  });
});
