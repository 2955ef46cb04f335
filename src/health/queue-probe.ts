import { randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Queue } from 'bull';
import { RedisClient, ServiceQueues } from '../queue/queue.module';
import { lastErrorOf, RedisConnections } from '../queue/redis-connections';
import { processingStopped } from '../queue/start-processing';

/** Bull's clients as the probe reads them: the getters create a client, the flags say whether one was made. */
type BullQueue = Queue & {
  keyPrefix: string;
  handlers: Record<string, unknown>;
  bclient: Queue['client'];
  eclient: Queue['client'];
  bclientInitialized?: boolean;
  subscriberInitialized?: boolean;
};

/** /ready's words for RedisClient.clusterMismatch (without a URL's form: no message of /ready holds one). */
const CLUSTER_NODE =
  'REDIS_URL names one node of a Redis Cluster, not the cluster: every key of the slots that node does not serve (rate limits among them) is refused with MOVED; name the cluster with the redis+cluster scheme (docs/redis-cluster.md)';

/** Lifetime of the key a probe writes: it is overwritten by the next probe and gone soon after the last. */
const PROBE_KEY_TTL_MS = 10_000;

/**
 * Whether the queue can take and hand out work, asked through the Bull queues' own clients (not
 * another connection): each queue's client writes and reads back a short-lived key under the
 * queue's prefix (so in the queues' hash slot: a node of a Redis Cluster that does not own it
 * answers MOVED), and the clients the process needs are connected: the command client everywhere,
 * the blocking client (which waits for the next job) of every queue this process takes jobs from,
 * and the event subscriber where one was made.
 */
@Injectable()
export class QueueProbe {
  /** This process's probe key suffix: processes do not overwrite each other's keys. */
  private readonly probeId = randomBytes(8).toString('hex');

  constructor(
    private readonly queues: ServiceQueues,
    private readonly redis: RedisClient,
    private readonly connections: RedisConnections,
  ) {}

  /**
   * Throws an Error saying which queue cannot work and why, in words for an operator; first, when
   * REDIS_URL names one node of a Redis Cluster with redis://, that (RedisClient.clusterMismatch):
   * a node that owns the queues' slot passes the queue probe, while every key of another slot,
   * the rate limits' among them, is refused, so the limits would let every call through unseen.
   */
  async check(): Promise<void> {
    const mismatch = this.redis.clusterMismatch !== undefined;
    const queues = this.queues.all() as BullQueue[];
    const failures = (
      await Promise.all(
        queues.map((queue) =>
          this.checkQueue(queue).then(
            () => null,
            (error: Error) => error.message,
          ),
        ),
      )
    ).filter((message): message is string => message !== null);
    if (mismatch) failures.push(CLUSTER_NODE);
    if (failures.length) throw new Error([...new Set(failures)].join('; '));
  }

  private async checkQueue(queue: BullQueue): Promise<void> {
    const client = queue.client;
    if (client.status !== 'ready')
      throw new Error(`queue ${queue.name} cannot take work: its Redis connection is ${stateOf(client)} (${whyNotReady(client, this.connections.isCluster)})`);
    const key = `${queue.keyPrefix}:${queue.name}:ready-probe:${this.probeId}`;
    const token = randomBytes(8).toString('hex');
    const results = await client.pipeline().set(key, token, 'PX', PROBE_KEY_TTL_MS).get(key).exec();
    const failed = results?.find(([error]) => error)?.[0];
    if (failed) throw new Error(`queue ${queue.name} cannot take work: ${describeRedisError(failed, this.connections.isCluster)}`);
    if (results?.[1]?.[1] !== token) throw new Error(`queue ${queue.name} cannot take work: Redis did not give back the key the probe wrote`);
    if (Object.keys(queue.handlers).length > 0) {
      // The blocking client waits in BRPOPLPUSH: its state is all there is to read without queuing behind it.
      const status = queue.bclientInitialized ? stateOf(queue.bclient) : 'not connected yet';
      if (status !== 'ready') {
        const why = queue.bclientInitialized ? ` (${whyNotReady(queue.bclient, this.connections.isCluster)})` : '';
        throw new Error(`queue ${queue.name} cannot hand out work: its blocking Redis connection is ${status}${why}`);
      }
      const stoppedBy = processingStopped(queue);
      if (stoppedBy)
        throw new Error(
          `queue ${queue.name} cannot hand out work: its processing stopped (${describeRedisError(stoppedBy, this.connections.isCluster)}) and is being started again`,
        );
    }
    if (queue.subscriberInitialized && queue.eclient.status !== 'ready') {
      throw new Error(`queue ${queue.name} cannot hear of delayed jobs: its Redis subscriber connection is ${stateOf(queue.eclient)}`);
    }
  }
}

/** ioredis's status of a connection, in words: `close` and `end` read as closed and ended. */
function stateOf(connection: Queue['client']): string {
  const words: Record<string, string> = { close: 'closed', end: 'ended', wait: 'not connected yet' };
  return words[connection.status] ?? connection.status;
}

/** Why a connection is not ready, from the last error it met: refused credentials, say; else what its state most often means. */
function whyNotReady(connection: Queue['client'], cluster: boolean): string {
  const error = lastErrorOf(connection);
  return error ? describeRedisError(error, cluster) : 'Redis unreachable or refusing';
}

/** A Redis error in an operator's words; never a URL (its password). */
export function describeRedisError(error: Error, cluster = false): string {
  const message = error.message.replace(/\/\/[^@\s/]*@/g, '//***@');
  // A cluster client follows MOVED itself: one that gives up has met more redirections than it follows.
  if (message.startsWith('MOVED') && cluster)
    return "Redis answered MOVED more times than the client follows: the cluster's slot map is changing (a failover or a resharding)";
  if (message.startsWith('MOVED')) {
    return "Redis answered MOVED: this node does not own the queue's slot (REDIS_URL names one node of a Redis Cluster; point it at the cluster, redis+cluster://…)";
  }
  if (message.startsWith('ASK')) return "Redis answered ASK: the queue's slot is being moved between cluster nodes";
  if (message.startsWith('CLUSTERDOWN')) return 'Redis answered CLUSTERDOWN: the cluster is down or does not serve the slot';
  if (message.startsWith('READONLY')) return 'Redis answered READONLY: REDIS_URL points at a replica, which takes no writes';
  if (message.startsWith('OOM')) return 'Redis is out of memory (maxmemory) and refuses writes';
  if (/^(NOAUTH|WRONGPASS)/.test(message)) return 'Redis refused the credentials in REDIS_URL';
  if (/^(connect|getaddrinfo|read|write) E[A-Z]+|^Connection is closed/.test(message)) return `Redis cannot be reached (${message})`;
  return `Redis answered an error: ${message}`;
}
