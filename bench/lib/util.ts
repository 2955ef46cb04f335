import { createServer } from 'node:net';

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Percentile (nearest rank) of an unsorted list; Infinity entries count as "never arrived". */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank];
}

export interface Percentiles {
  count: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
}

export function percentilesOf(values: number[]): Percentiles {
  const sorted = Float64Array.from(values).sort();
  const list = Array.from(sorted);
  return {
    count: list.length,
    p50: percentile(list, 50),
    p95: percentile(list, 95),
    p99: percentile(list, 99),
    max: list.length ? list[list.length - 1] : NaN,
  };
}

/** A free TCP port on 127.0.0.1 (closed again at once; the small race is acceptable here). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** The median of the values (the mean of the middle two for an even count); NaN for none. */
export function median(values: number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

export function fmtNum(value: number, digits = 0): string {
  if (value === undefined || value === null || Number.isNaN(value)) return 'n/a';
  if (!Number.isFinite(value)) return '∞';
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

export function fmtMs(value: number): string {
  if (value === undefined || value === null || Number.isNaN(value)) return 'n/a';
  if (!Number.isFinite(value)) return 'never';
  if (value >= 10_000) return `${fmtNum(value / 1000, 1)} s`;
  return `${fmtNum(value, value < 10 ? 1 : 0)} ms`;
}

export function fmtPct(ratio: number): string {
  if (ratio === undefined || ratio === null || Number.isNaN(ratio)) return 'n/a';
  return `${fmtNum(ratio * 100, 1)} %`;
}

export function fmtMb(bytes: number): string {
  if (!Number.isFinite(bytes)) return 'n/a';
  return `${fmtNum(bytes / 1024 / 1024, 1)} MB`;
}

/** Logs a line (never interleaved with the progress line). */
let progressShown = false;
export function log(message: string): void {
  if (progressShown && process.stderr.isTTY) process.stderr.write('\r\x1b[K');
  progressShown = false;
  process.stderr.write(`${message}\n`);
}

/** The one progress line: rewritten in place on a TTY, a plain line every few seconds otherwise. */
let lastPlain = 0;
export function progress(message: string): void {
  if (process.stderr.isTTY) {
    process.stderr.write(`\r\x1b[K${message}`);
    progressShown = true;
    return;
  }
  const now = Date.now();
  if (now - lastPlain >= 5000) {
    lastPlain = now;
    process.stderr.write(`  … ${message}\n`);
  }
}

export function resetProgress(): void {
  lastPlain = 0;
}

/** An error that stops waitUntil at once (a child process died, ...). */
export class FatalError extends Error {
  override name = 'FatalError';
}

export async function waitUntil<T>(what: string, check: () => Promise<T | undefined | false | null>, timeoutMs: number, intervalMs = 200): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value;
    } catch (error) {
      if (error instanceof FatalError) throw error;
      lastError = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastError ? ` (last error: ${(lastError as Error).message})` : ''}`);
    }
    await sleep(intervalMs);
  }
}
