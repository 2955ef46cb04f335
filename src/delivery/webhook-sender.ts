import { Injectable, OnModuleDestroy } from '@nestjs/common';
import { Pool } from 'undici';
import { pinnedLookup } from '../outbound-http';
import { retryAfterMs } from './retry-after';

/** Response bodies are kept up to this many bytes (spec: Limits, 2 KB). */
export const MAX_STORED_RESPONSE_BYTES = 2048;
const MAX_POOLS = 1000;

export interface SendRequest {
  url: URL;
  /** The address the URL policy approved for this attempt: the only one we connect to. */
  address: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
}

export type SendErrorKind = 'timeout' | 'connection_refused' | 'connection_reset' | 'dns' | 'tls' | 'network' | 'url_refused';

export type SendResult =
  | {
      ok: boolean;
      statusCode: number;
      responseBody: string;
      durationMs: number;
      /** A 429's or 503's Retry-After, in ms from the answer. */ retryAfterMs?: number;
    }
  | { ok: false; statusCode: null; errorKind: SendErrorKind; error: string; durationMs: number };

/**
 * POSTs one signed body. Keep-alive pools per (origin, pinned address); the TLS name and Host
 * header stay the URL's host while the socket goes to the checked address (no second lookup).
 * Redirects are not followed; at most 2 KB of the answer is read and kept, the rest discarded.
 */
@Injectable()
export class WebhookSender implements OnModuleDestroy {
  private readonly pools = new Map<string, Pool>();

  async send(request: SendRequest): Promise<SendResult> {
    const started = performance.now();
    const duration = () => Math.round(performance.now() - started);
    const signal = AbortSignal.timeout(request.timeoutMs);
    try {
      const response = await this.pool(request.url, request.address).request({
        method: 'POST',
        path: `${request.url.pathname}${request.url.search}`,
        headers: request.headers,
        body: request.body,
        signal,
        headersTimeout: request.timeoutMs,
        bodyTimeout: request.timeoutMs,
      });
      const responseBody = await readCapped(response.body, MAX_STORED_RESPONSE_BYTES);
      const ok = response.statusCode >= 200 && response.statusCode < 300;
      const retryAfter = retryAfterMs(response.statusCode, response.headers['retry-after'], new Date());
      return { ok, statusCode: response.statusCode, responseBody, durationMs: duration(), ...(retryAfter === undefined ? {} : { retryAfterMs: retryAfter }) };
    } catch (error) {
      const kind = signal.aborted ? 'timeout' : classify(error);
      const message = kind === 'timeout' ? `no answer within ${request.timeoutMs} ms` : describe(error);
      return { ok: false, statusCode: null, errorKind: kind, error: message, durationMs: duration() };
    }
  }

  async onModuleDestroy(): Promise<void> {
    await Promise.all([...this.pools.values()].map((pool) => pool.close().catch(() => undefined)));
    this.pools.clear();
  }

  private pool(url: URL, address: string): Pool {
    const key = `${url.origin}|${address}`;
    let pool = this.pools.get(key);
    if (pool) return pool;
    if (this.pools.size >= MAX_POOLS) {
      const [oldestKey, oldest] = this.pools.entries().next().value as [string, Pool];
      this.pools.delete(oldestKey);
      void oldest.close().catch(() => undefined);
    }
    pool = new Pool(url.origin, {
      connections: 64,
      keepAliveTimeout: 30_000,
      // Pinning: whatever name the URL has, the socket goes to the address that was checked.
      connect: { lookup: pinnedLookup(address) } as object,
    });
    this.pools.set(key, pool);
    return pool;
  }
}

/** Reads at most `limit` bytes as UTF-8 text (never more than `limit` bytes once encoded), then lets the rest go. */
async function readCapped(body: AsyncIterable<Buffer> & { destroy: (error?: Error) => void }, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.length;
    if (size >= limit) {
      body.destroy();
      break;
    }
  }
  let text = Buffer.concat(chunks).subarray(0, limit).toString('utf8').replaceAll('\u0000', '');
  while (Buffer.byteLength(text, 'utf8') > limit) text = text.slice(0, -1);
  return text;
}

function classify(error: unknown): SendErrorKind {
  const code = (error as { code?: string; cause?: { code?: string } })?.code ?? (error as { cause?: { code?: string } })?.cause?.code;
  if (code === 'ECONNREFUSED') return 'connection_refused';
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET' || code === 'EPIPE') return 'connection_reset';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'dns';
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT') return 'timeout';
  if (typeof code === 'string' && (code.startsWith('ERR_TLS') || code.includes('CERT') || code.startsWith('ERR_SSL'))) return 'tls';
  return 'network';
}

function describe(error: unknown): string {
  const e = error as { code?: string; message?: string };
  return [e?.code, e?.message].filter(Boolean).join(': ').slice(0, 300) || 'network error';
}
