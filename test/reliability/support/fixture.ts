import { LoadReceiver } from './receiver';
import { createDatabase, PrivateRedis, ServiceProcess } from './stack';

/**
 * A whole deployment for one test: a database of its own on the shared PostgreSQL (or a URL
 * given), a private redis-server, N `api` and M `worker` processes, and a receiver.
 */
export interface Stack {
  databaseUrl: string;
  redis: PrivateRedis;
  apis: ServiceProcess[];
  workers: ServiceProcess[];
  receiver: LoadReceiver;
  receiverUrl: string;
  /** The environment every process got. */
  env: Record<string, string>;
  stop: () => Promise<void>;
}

export interface StackOptions {
  tag: string;
  apis?: number;
  workers?: number;
  /** Use this database instead of creating one on the shared PostgreSQL. */
  databaseUrl?: string;
  env?: Record<string, string>;
  /** Run this build of the service (compileBuildOf) instead of the current one. */
  build?: string;
}

/** The service's development settings for these tests: http:// and 127.0.0.0/8 receivers allowed, compressed timings. */
export const FAST_DELIVERY_ENV: Record<string, string> = {
  APP_ENV: 'development',
  // The suite reads the processes' logs (error lines by their JSON level, warnings by their text):
  // JSON lines, written as they happen, not development's pretty lines from a transport thread.
  LOG_FORMAT: 'json',
  WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8',
  DELIVERY_RETRY_SCHEDULE: '1s,2s,2s,2s,2s',
  DELIVERY_TIMEOUT_MS: '2000',
  DELIVERY_SWEEP_INTERVAL_MS: '1000',
  DELIVERY_SWEEP_GRACE_MS: '2000',
  OUTBOX_POLL_INTERVAL_MS: '500',
};

/**
 * The per-key, per-person and per-IP limits out of the way (the fuzzer sends thousands of calls
 * with one key, the authorization matrix hundreds of forms per person, and every request comes from
 * 127.0.0.1); the tests of the limits (mcp-flood, web-flood) set their own.
 */
export const ROOMY_LIMITS_ENV: Record<string, string> = {
  MCP_KEY_CONCURRENCY: '1000',
  MCP_RATE_LIMIT: '100000000',
  PIXEL_RATE_LIMIT: '100000000',
  ATTACHMENT_RATE_LIMIT: '100000000',
  WEBHOOK_KEYS_RATE_LIMIT: '100000000',
  WEB_ACTION_RATE_LIMIT: '100000000',
};

export async function startStack(options: StackOptions): Promise<Stack> {
  const cleanups: Array<() => Promise<void>> = [];
  const stop = async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch((e: Error) => process.stderr.write(`cleanup: ${e.message}\n`));
  };
  try {
    const receiver = new LoadReceiver();
    const receiverUrl = await receiver.start();
    cleanups.push(() => receiver.stop());
    let databaseUrl = options.databaseUrl;
    if (!databaseUrl) {
      const db = await createDatabase(options.tag);
      cleanups.push(db.drop);
      databaseUrl = db.url;
    }
    const redis = await PrivateRedis.start();
    cleanups.push(() => redis.stop());
    const env: Record<string, string> = {
      ...FAST_DELIVERY_ENV,
      ...ROOMY_LIMITS_ENV,
      DATABASE_URL: databaseUrl,
      REDIS_URL: redis.url,
      QUEUE_PREFIX: '{rel}',
      ...options.env,
      // For investigations: RELIABILITY_ENV='{"DELIVERY_SWEEP_GRACE_MS":"60000"}' overrides any of the above.
      ...(JSON.parse(process.env.RELIABILITY_ENV ?? '{}') as Record<string, string>),
    };
    const apis: ServiceProcess[] = [];
    const workers: ServiceProcess[] = [];
    cleanups.push(async () => {
      await Promise.all([...apis, ...workers].map((p) => p.stop('SIGTERM')));
    });
    for (let i = 0; i < (options.apis ?? 1); i++) {
      apis.push(await ServiceProcess.start({ name: `${options.tag}-api${i + 1}`, role: 'api', env: { LOG_LEVEL: 'warn', ...env }, build: options.build }));
    }
    for (let i = 0; i < (options.workers ?? 1); i++) {
      workers.push(
        await ServiceProcess.start({ name: `${options.tag}-worker${i + 1}`, role: 'worker', env: { LOG_LEVEL: 'info', ...env }, build: options.build }),
      );
    }
    return { databaseUrl, redis, apis, workers, receiver, receiverUrl, env, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
