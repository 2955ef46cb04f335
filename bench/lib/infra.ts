import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import Redis from 'ioredis';
import { Client } from 'pg';

export const BASE_DATABASE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';

export function databaseUrlFor(name: string): string {
  const url = new URL(BASE_DATABASE_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

async function withAdmin<T>(run: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: BASE_DATABASE_URL });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

export async function createDatabase(name: string): Promise<void> {
  if (!/^[a-z0-9_]+$/.test(name)) throw new Error(`bad database name ${name}`);
  await withAdmin((c) => c.query(`CREATE DATABASE ${name}`));
}

export async function dropDatabase(name: string): Promise<void> {
  if (!/^[a-z0-9_]+$/.test(name)) throw new Error(`bad database name ${name}`);
  await withAdmin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
}

/**
 * Starts a scenario from a finished checkpoint: otherwise the WAL of the one before (a checkpoint
 * is requested every ~540 MB with PostgreSQL's default max_wal_size) puts a spread checkpoint,
 * and the full-page images that follow it, in the next one's window. Needs a superuser; when
 * refused the run goes on and says so.
 */
export async function checkpoint(): Promise<string | null> {
  try {
    await withAdmin((c) => c.query('CHECKPOINT'));
    return null;
  } catch (error) {
    return (error as Error).message;
  }
}

/** Deletes every Redis key under the given glob (our run's Bull prefixes). */
export async function deleteRedisKeys(pattern: string): Promise<number> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 2 });
  await redis.connect();
  let deleted = 0;
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      if (keys.length) deleted += await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  return deleted;
}

export interface RedisMemory {
  usedMemory: number;
  /** Sum of MEMORY USAGE over our prefix's keys (the shared server also holds other runs' keys). */
  prefixBytes: number;
  prefixKeys: number;
  delayed: number;
}

export async function redisMemory(prefix: string, queueName: string): Promise<RedisMemory> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 2 });
  await redis.connect();
  try {
    const info = await redis.info('memory');
    const usedMemory = Number(/used_memory:(\d+)/.exec(info)?.[1] ?? NaN);
    let prefixBytes = 0;
    let prefixKeys = 0;
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${escapeGlob(prefix)}*`, 'COUNT', 2000);
      cursor = next;
      if (keys.length === 0) continue;
      const pipeline = redis.pipeline();
      for (const key of keys) pipeline.memory('USAGE', key, 'SAMPLES', '5');
      const results = (await pipeline.exec()) ?? [];
      for (const [error, bytes] of results) if (!error && typeof bytes === 'number') prefixBytes += bytes;
      prefixKeys += keys.length;
    } while (cursor !== '0');
    const delayed = await redis.zcard(`${prefix}:${queueName}:delayed`);
    return { usedMemory, prefixBytes, prefixKeys, delayed };
  } finally {
    redis.disconnect();
  }
}

export function escapeGlob(value: string): string {
  return value.replace(/([*?[\]\\])/g, '\\$1');
}

export async function redisInfo(): Promise<{ version: string; pid: number }> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 2 });
  await redis.connect();
  try {
    const info = await redis.info('server');
    return { version: /redis_version:(\S+)/.exec(info)?.[1] ?? '?', pid: Number(/process_id:(\d+)/.exec(info)?.[1] ?? 0) };
  } finally {
    redis.disconnect();
  }
}

export async function postgresVersion(): Promise<string> {
  return withAdmin(async (c) => (await c.query('SHOW server_version')).rows[0].server_version as string);
}

export interface MachineInfo {
  nproc: string;
  memory: string;
  cpuModel: string;
  node: string;
  postgres: string;
  redis: string;
  commit: string;
  dirty: number;
  kernel: string;
  loadAtStart: string;
}

export async function machineInfo(cwd: string): Promise<MachineInfo> {
  const sh = (cmd: string, args: string[]) => {
    try {
      return execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    } catch {
      return '?';
    }
  };
  const memKb = Number(/MemTotal:\s+(\d+)/.exec(readFileSync('/proc/meminfo', 'utf8'))?.[1] ?? 0);
  const dirtyList = sh('git', ['status', '--porcelain']);
  return {
    nproc: sh('nproc', []),
    memory: memKb ? `${(memKb / 1024 / 1024).toFixed(1)} GiB` : `${(totalmem() / 2 ** 30).toFixed(1)} GiB`,
    cpuModel: cpus()[0]?.model ?? '?',
    node: process.version,
    postgres: await postgresVersion().catch(() => '?'),
    redis: (await redisInfo().catch(() => ({ version: '?' }))).version,
    commit: sh('git', ['rev-parse', '--short=12', 'HEAD']),
    dirty: dirtyList === '?' || dirtyList === '' ? 0 : dirtyList.split('\n').length,
    kernel: sh('uname', ['-r']),
    loadAtStart: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' '),
  };
}

// ---- /proc readings -------------------------------------------------------------------------

const TICKS = 100; // USER_HZ on Linux

/** CPU seconds (user + system) a process has used so far, or NaN when it is gone. */
export function processCpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS;
  } catch {
    return NaN;
  }
}

/** VmRSS and VmHWM (peak) of a process, in bytes. */
export function processMemory(pid: number): { rss: number; hwm: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN) * 1024;
    return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
  } catch {
    return { rss: NaN, hwm: NaN };
  }
}

/** Whole-machine CPU: busy and total jiffies so far. */
export function machineCpu(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0];
  const values = line.trim().split(/\s+/).slice(1).map(Number);
  const idle = values[3] + (values[4] ?? 0);
  const total = values.reduce((a, b) => a + b, 0);
  return { busy: total - idle, total };
}
