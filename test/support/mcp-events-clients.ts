import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { z } from 'zod';
import { validatedEventsResult } from './event-schemas';
import { MCP_URL } from './mcp';
import { mirroredHeaders, modernMessage } from './mcp-modern';
import { SseClient } from './sse';

/** MCP Events through the official clients of both SDK lines, sending raw events/* requests; every answer is checked against the event catalog (event-schemas.ts). */
export type Result = Record<string, any>;

/** What a client of either SDK line does with the events extension: raw events/* requests (no SDK helper exists yet). */
export interface EventsClient {
  request(method: string, params?: Record<string, unknown>): Promise<Result>;
  capabilities(): Result | undefined;
  close(): Promise<void>;
}

const ANY_RESULT = z.object({}).passthrough();

export async function connectLegacy(baseUrl: string, token: string): Promise<EventsClient> {
  const client = new LegacyClient({ name: 'e2e-events-v1', version: '1.0.0' });
  await client.connect(new LegacyTransport(new URL(`${baseUrl}/api/mcp`), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  return {
    request: async (method, params) =>
      validatedEventsResult(method, (await client.request({ method, params }, ANY_RESULT as never, { timeout: 60_000 })) as Result),
    capabilities: () => client.getServerCapabilities() as Result | undefined,
    close: () => client.close(),
  };
}

export async function connectModern(baseUrl: string, token: string): Promise<EventsClient> {
  const client = new ModernClient({ name: 'e2e-events-v2', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new ModernTransport(new URL(`${baseUrl}/api/mcp`), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  return {
    request: async (method, params) =>
      validatedEventsResult(method, (await client.request({ method, params } as never, ANY_RESULT, { timeout: 60_000 })) as Result),
    capabilities: () => client.getServerCapabilities() as Result | undefined,
    close: () => client.close(),
  };
}

/** The JSON-RPC error a request was refused with, as the SDK hands it to the caller. */
export async function refusal(promise: Promise<unknown>): Promise<{ code: number; data: Result }> {
  try {
    await promise;
  } catch (error) {
    const e = error as { code?: number; data?: Result };
    return { code: e.code!, data: e.data! };
  }
  throw new Error('the request was not refused');
}

/**
 * POSTs events/stream with id `id` as a client of either era sends it (a 2026-07-28 request carries
 * its `_meta` envelope and the headers mirrored from its body), on a connection of its own, and
 * reads the answer as raw server-sent events.
 */
export function openEventStream(baseUrl: string, era: 'legacy' | 'modern', token: string, id: number, params: Record<string, unknown>): Promise<SseClient> {
  const body = era === 'modern' ? modernMessage('events/stream', params, { id }) : { jsonrpc: '2.0', id, method: 'events/stream', params };
  const headers = {
    authorization: `Bearer ${token}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    ...(era === 'modern' ? mirroredHeaders(body) : {}),
  };
  return SseClient.post(baseUrl, MCP_URL, headers, JSON.stringify(body));
}
