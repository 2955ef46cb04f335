/**
 * The peer of scenario 10: an MCP server built on the official v2 SDK (`createMcpHandler` from
 * `@modelcontextprotocol/server`, mounted with `toNodeHandler` from `@modelcontextprotocol/node`
 * on a plain `node:http` server) that serves the service's own tools from the same database.
 *
 * Only the protocol layer is the SDK's. Everything a call does besides the protocol is the
 * service's own compiled code (dist/, the build the service processes run), booted as a Nest
 * application context of the service's AppModule (PROCESS_ROLE=api: no HTTP server, no
 * background work): the API key is looked up by ApiKeysService (the same batched statement as the
 * service's guard), the key's running-call slot and rate limit are ApiKeyLimits' (`enter`, `spend`:
 * one Redis round trip), the permission rule is `refusal`, the arguments are judged by the tool's
 * own compiled validator (handed to the SDK through `fromJsonSchema`), and the result goes through
 * `visibleResult` as the service's answers do. What the peer does not have: Express and Nest's
 * router, pino-http's request log, the HTTP metrics middleware and the per-call metrics and span,
 * the Origin check, and the result check against the output schema (off in the service too, as in
 * production). Every era the SDK serves is served: 2026-07-28 by the modern leg, 2025-era requests
 * by its stateless legacy fallback (a fresh server per request).
 *
 *   POST /mcp      the MCP endpoint (Authorization: Bearer <API key>)
 *   GET  /health   200 once the application context is up
 *
 * Started by scenario 10 (bench/scenarios/s10-eras.ts) with the service's environment.
 */
import 'reflect-metadata';
import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import { NestFactory } from '@nestjs/core';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { AuthInfo } from '@modelcontextprotocol/server';
import { loadServiceBuild, sdkMcpHandler } from './lib/sdk-server';

async function main(): Promise<void> {
  const build = await loadServiceBuild();
  const { AppModule, ToolRegistry, ApiKeysService, ApiKeyLimits, RateLimitedError } = build;
  const context = await NestFactory.createApplicationContext(AppModule, { logger: ['error', 'warn'] });
  const registry = context.get(ToolRegistry);
  const apiKeys = context.get(ApiKeysService);
  const limits = context.get(ApiKeyLimits);

  const names = (process.env.PEER_TOOLS ?? 'list_webhooks,get_thread').split(',').filter(Boolean);
  const tools = names.map((name) => {
    const tool = registry.get(name);
    if (!tool) throw new Error(`no tool named ${name}`);
    return tool;
  });
  const handler = sdkMcpHandler(build, tools);
  const mcp = toNodeHandler(handler);

  const answer = (res: ServerResponse, status: number, body: object, headers: Record<string, string> = {}) => {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)), ...headers });
    res.end(text);
  };

  /** The service's admission, key lookup and rate limit in front of the SDK's handler, as an Express-style middleware would be. */
  const serve = async (req: IncomingMessage & { auth?: AuthInfo }, res: ServerResponse): Promise<void> => {
    const path = req.url?.split('?')[0];
    if (path === '/health') return answer(res, 200, { ok: true });
    if (path !== '/mcp') return answer(res, 404, { error: 'not found' });
    const match = /^Bearer (\S+)$/i.exec(req.headers.authorization ?? '');
    if (!match) return answer(res, 401, { error: 'an API key is required' });
    const token = match[1];
    let ticket;
    try {
      ticket = limits.enter(token);
    } catch (error) {
      if (error instanceof RateLimitedError) return answer(res, 429, { error: error.message }, { 'retry-after': String(error.retryAfterSeconds) });
      throw error;
    }
    try {
      const caller = await apiKeys.resolve(token);
      if (!caller) return answer(res, 401, { error: 'the API key is unknown or revoked' });
      await limits.spend(caller.keyId, 1, 'this API key');
      req.auth = { token, clientId: caller.keyId, scopes: caller.permissions, extra: { caller } };
      await mcp(req, res);
    } catch (error) {
      if (error instanceof RateLimitedError) return answer(res, 429, { error: error.message }, { 'retry-after': String(error.retryAfterSeconds) });
      throw error;
    } finally {
      ticket.release();
    }
  };

  const http = createServer((req, res) => {
    serve(req, res).catch((error: unknown) => {
      process.stderr.write(`sdk peer: ${error instanceof Error ? error.stack : String(error)}\n`);
      if (!res.headersSent) answer(res, 500, { error: 'internal error' });
      else res.destroy();
    });
  });
  http.keepAliveTimeout = 65_000;
  await new Promise<void>((done) => http.listen(Number(process.env.PORT ?? 0), '127.0.0.1', done));
  const close = async () => {
    http.close();
    await handler.close().catch(() => undefined);
    await context.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void close());
  process.send?.({ ready: true });
}

process.on('disconnect', () => process.exit(0));
main().catch((error: unknown) => {
  process.stderr.write(`sdk peer failed: ${(error as Error).stack}\n`);
  process.exit(1);
});
