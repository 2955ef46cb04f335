import { list } from '../config/parsers';
import { defineSlice, integer, oneOf, Refused, text } from '../config/settings';

/** The MCP endpoint: who may call it from a browser, and how much one request and one key may ask. */
export const mcpConfig = defineSlice({
  mcp: {
    allowedOrigins: text('MCP_ALLOWED_ORIGINS', { default: '' }).to((value) => {
      const origins = list(value);
      const bad = origins.filter((origin) => !/^https?:\/\/[^/\s]+$/.test(origin));
      if (bad.length) throw new Refused(...bad.map((origin) => `${origin} is not an origin such as https://app.example.com`));
      return origins;
    }),
    maxBodyBytes: integer('MCP_MAX_BODY_BYTES', { min: 1024, max: 64 * 1024 * 1024, default: 1024 * 1024 }),
    /** Most messages one JSON-RPC batch may hold; a larger batch is refused whole. */
    maxBatch: integer('MCP_MAX_BATCH', { min: 1, max: 1000, default: 50 }),
    /** Messages of one batch that run at the same time. */
    batchConcurrency: integer('MCP_BATCH_CONCURRENCY', { min: 1, max: 64, default: 4 }),
    /** Calls (batch messages) of one API key that may run at the same time in one process. */
    keyConcurrency: integer('MCP_KEY_CONCURRENCY', { min: 1, max: 10_000, default: 8 }),
    /** subscriptions/listen streams (revision 2026-07-28) one API key or OAuth grant may hold open at once in one API process; one more gets 429. */
    listenStreamsPerKey: integer('MCP_LISTEN_STREAMS_PER_KEY', { min: 1, max: 1000, default: 10 }),
    /** subscriptions/listen streams one API process holds open at once, every caller's together; one more gets 429. */
    listenStreamsPerProcess: integer('MCP_LISTEN_STREAMS_PER_PROCESS', { min: 1, max: 100_000, default: 5000 }),
    /** A keep-alive comment goes down every listen stream this often, and each stream's credential is checked again then. */
    listenKeepaliveMs: integer('MCP_LISTEN_KEEPALIVE_MS', { min: 1000, max: 300_000, default: 15_000 }),
    /** Whether each tool result is checked against the tool's output schema before it is sent (default: in development). */
    checkResults: oneOf('MCP_CHECK_RESULTS', ['true', 'false'], { default: ({ isDevelopment }) => (isDevelopment ? 'true' : 'false') }).to(
      (value) => value === 'true',
    ),
  },
});
