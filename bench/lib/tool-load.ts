import { Pool } from 'undici';
import { ToolLevelResult } from './context';
import { Monitor } from './monitor';
import { fmtNum, percentilesOf, progress } from './util';

export type Call = (i: number) => Promise<void>;

/** Runs `concurrency` loops of `call` for `ms` after a warm-up; req/s and latency percentiles. */
export async function drive(
  label: string,
  concurrency: number,
  calls: Call[],
  warmupMs: number,
  ms: number,
  monitor: Monitor,
): Promise<Omit<ToolLevelResult, 'concurrency' | 'mode'>> {
  let errors = 0;
  let lastError: string | undefined;
  const latencies: number[] = [];
  let measuring = false;
  let n = 0;
  const warmEnd = performance.now() + warmupMs;
  const end = warmEnd + ms;
  let counted = 0;
  let completed = 0;
  let monitorStarted: Promise<void> | undefined;
  let lastT = performance.now();
  let lastCount = 0;
  const loop = async (call: Call) => {
    while (performance.now() < end) {
      const i = n++;
      const t0 = performance.now();
      if (!measuring && t0 >= warmEnd) {
        measuring = true;
        monitorStarted = monitor.start();
      }
      try {
        await call(i);
        completed += 1;
        const t1 = performance.now();
        if (t0 >= warmEnd && t1 <= end) {
          latencies.push(t1 - t0);
          counted += 1;
        }
      } catch (error) {
        errors += 1;
        lastError = (error as Error).message;
      }
      const t = performance.now();
      if (t - lastT >= 1000) {
        progress(`${label}  ${fmtNum(((completed - lastCount) * 1000) / (t - lastT))} req/s  errors ${errors}`);
        lastT = t;
        lastCount = completed;
      }
    }
  };
  await Promise.all(calls.slice(0, concurrency).map(loop));
  await monitorStarted;
  const cpu = await monitor.stop();
  return { reqPerSec: counted / (ms / 1000), latency: percentilesOf(latencies), errors, lastError, cpu };
}

export function checkToolAnswer(text: string): void {
  const answer = JSON.parse(text) as { result?: { isError?: boolean; structuredContent?: unknown }; error?: { message: string } };
  if (answer.error) throw new Error(`JSON-RPC error: ${answer.error.message}`);
  if (!answer.result || answer.result.isError || !answer.result.structuredContent) throw new Error(`tool failed: ${text.slice(0, 200)}`);
}

/** One raw JSON-RPC tools/call over `pool` with `bearer`; throws unless the tool answered with structured content. */
export async function rawToolCall(pool: Pool, bearer: string, id: number, name: string, args: Record<string, unknown>): Promise<void> {
  checkToolAnswer(await rawToolText(pool, bearer, id, name, args));
}

/** rawToolCall's request; the answer's body as sent (HTTP 200 only). */
export async function rawToolText(pool: Pool, bearer: string, id: number, name: string, args: Record<string, unknown>): Promise<string> {
  const res = await pool.request({
    method: 'POST',
    path: '/api/mcp',
    headers: {
      authorization: `Bearer ${bearer}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-06-18',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } }),
  });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`HTTP ${res.statusCode}: ${text.slice(0, 200)}`);
  return text;
}

/** What runCalls measured: each call's duration (ms) and the wall time the calls took. */
export interface CallsRun {
  seconds: number;
  latencies: number[];
  errors: number;
  lastError?: string;
}

/**
 * Exactly `count` calls of `call` over `concurrency` loops (a fixed request count, where drive runs
 * for a fixed time): every path of scenario 10 gets the same calls.
 */
export async function runCalls(label: string, concurrency: number, call: Call, count: number): Promise<CallsRun> {
  const latencies: number[] = [];
  let errors = 0;
  let lastError: string | undefined;
  let next = 0;
  let lastT = performance.now();
  let lastCount = 0;
  const started = performance.now();
  const loop = async () => {
    while (next < count) {
      const i = next++;
      const t0 = performance.now();
      try {
        await call(i);
        latencies.push(performance.now() - t0);
      } catch (error) {
        errors += 1;
        lastError = (error as Error).message;
      }
      const t = performance.now();
      if (t - lastT >= 1000) {
        progress(`${label}  ${fmtNum(((latencies.length - lastCount) * 1000) / (t - lastT))} req/s  ${latencies.length + errors}/${count}  errors ${errors}`);
        lastT = t;
        lastCount = latencies.length;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  return { seconds: (performance.now() - started) / 1000, latencies, errors, lastError };
}
