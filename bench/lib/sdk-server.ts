/**
 * The service's own code as scenario 10's SDK peer uses it, loaded from the build (dist/: the code
 * the service's processes run, not a second compilation of src/), and the MCP handler the peer
 * builds on the official v2 SDK around the service's tools.
 */
import { join, resolve } from 'node:path';
import { CallToolResult, createMcpHandler, CreateMcpHandlerOptions, fromJsonSchema, McpHttpHandler, McpServer } from '@modelcontextprotocol/server';
import type { KeyPrincipal as KeyCaller } from '../../src/identity/principal';
import type { RegisteredTool } from '../../src/mcp/tool-registry';

const DIST = resolve(__dirname, '..', '..', 'dist', 'src');

/** The modules of the build the peer and the protocol micro-benchmark use. */
export async function loadServiceBuild() {
  const load = <T>(path: string) => import(join(DIST, path)) as Promise<T>;
  const [app, registry, apiKeys, limits, visible, wellFormed, errors, service, answer, eras, toolArguments] = await Promise.all([
    load<typeof import('../../src/app.module')>('app.module.js'),
    load<typeof import('../../src/mcp/tool-registry')>('mcp/tool-registry.js'),
    load<typeof import('../../src/auth/api-keys.service')>('auth/api-keys.service.js'),
    load<typeof import('../../src/limits/api-key-limits.service')>('limits/api-key-limits.service.js'),
    load<typeof import('../../src/mcp/visible-text')>('mcp/visible-text.js'),
    load<typeof import('../../src/common/well-formed')>('common/well-formed.js'),
    load<typeof import('../../src/common/errors')>('common/errors.js'),
    load<typeof import('../../src/mcp/mcp.service')>('mcp/mcp.service.js'),
    load<typeof import('../../src/mcp/mcp-answer')>('mcp/mcp-answer.js'),
    load<typeof import('../../src/mcp/protocol-eras')>('mcp/protocol-eras.js'),
    load<typeof import('../../src/tools/tool-arguments')>('tools/tool-arguments.js'),
  ]);
  return { ...app, ...registry, ...apiKeys, ...limits, ...visible, ...wellFormed, ...errors, ...service, ...answer, ...eras, ...toolArguments };
}

export type ServiceBuild = Awaited<ReturnType<typeof loadServiceBuild>>;

/** The tools as the peer needs them: the service's registration (handler, validator, advertised form). */
export type PeerTool = Pick<RegisteredTool, 'spec' | 'permission' | 'advertised' | 'handler' | 'validate'>;

/**
 * createMcpHandler serving `tools` in both eras (2025-era requests through the SDK's stateless
 * fallback). A call does what McpService.callTool does after the protocol: the permission rule,
 * the tool's own compiled argument validator (behind the SDK's validation step, through
 * fromJsonSchema, prepared once: the SDK's factory runs per request), well-formed text, the
 * handler and visibleResult. The caller is the `extra.caller` of the request's authInfo.
 */
export function sdkMcpHandler(build: ServiceBuild, tools: PeerTool[], options: CreateMcpHandlerOptions = {}): McpHttpHandler {
  const { refusal, findIllFormed, visibleResult, visibleText } = build;
  const prepared = tools.map((tool) => {
    const validator = {
      getValidator:
        <T>() =>
        (input: unknown) =>
          tool.validate(input)
            ? { valid: true as const, data: input as T, errorMessage: undefined }
            : { valid: false as const, data: undefined, errorMessage: `invalid arguments: ${tool.validate.errors?.[0]?.message ?? 'invalid'}` },
    };
    return { tool, inputSchema: fromJsonSchema(tool.advertised.inputSchema as Parameters<typeof fromJsonSchema>[0], validator) };
  });
  const toolError = (message: string): CallToolResult => ({ content: [{ type: 'text', text: visibleText(message) }], isError: true });
  return createMcpHandler(() => {
    const server = new McpServer({ name: 'messaging-sync-sdk-peer', version: '0.1.0' }, { capabilities: { tools: {} } });
    for (const { tool, inputSchema } of prepared) {
      const { name, title, description, annotations } = tool.advertised;
      server.registerTool(name, { title, description, inputSchema, annotations }, async (args, ctx) => {
        const caller = ctx.http?.authInfo?.extra?.caller as KeyCaller | undefined;
        if (!caller) throw new Error('no caller: the request was not authenticated');
        const refused = refusal(tool, caller);
        if (refused) return toolError(refused);
        const illFormed = findIllFormed(args);
        if (illFormed) return toolError(`invalid arguments: ${illFormed.message}`);
        const { json, value } = visibleResult(await tool.handler.execute(args as Record<string, unknown>, caller));
        return { content: [{ type: 'text', text: json }], structuredContent: value as Record<string, unknown> };
      });
    }
    return server;
  }, options);
}
