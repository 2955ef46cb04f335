import { Refused } from './settings';

/** Where the service's Redis is: one node (its URL as given), or a Redis Cluster and its seed nodes. */
export type RedisTarget =
  { kind: 'node'; url: string } | { kind: 'cluster'; seeds: Array<{ host: string; port: number }>; tls: boolean; username?: string; password?: string };

const CLUSTER_SCHEME = /^(rediss?)\+cluster:\/\//i;
const NODE_SCHEME = /^rediss?:\/\//i;

/**
 * Reads REDIS_URL (docs/configuration.md, "Redis"): `redis://` or `rediss://` names one node;
 * `redis+cluster://[user:password@]host:port,host:port,...` (`rediss+cluster://` for TLS) names a
 * Redis Cluster by some of its nodes (seeds; the client learns the rest from them), the user and
 * password applying to every node. Refusals name REDIS_URL and never repeat the password.
 */
export function parseRedisUrl(url: string): RedisTarget {
  if (NODE_SCHEME.test(url)) return { kind: 'node', url };
  const scheme = CLUSTER_SCHEME.exec(url);
  if (!scheme) throw new Refused('must be a redis://, rediss://, redis+cluster:// or rediss+cluster:// URL');
  let rest = url.slice(scheme[0].length);
  const end = rest.search(/[/?#]/);
  if (end >= 0) {
    const tail = rest.slice(end);
    if (tail !== '/' && tail !== '/0') throw new Refused('a cluster URL takes no database number, path or query (a Redis Cluster has database 0 only)');
    rest = rest.slice(0, end);
  }
  let username: string | undefined;
  let password: string | undefined;
  const at = rest.lastIndexOf('@');
  if (at >= 0) {
    const auth = rest.slice(0, at);
    rest = rest.slice(at + 1);
    const colon = auth.indexOf(':');
    try {
      username = decodeURIComponent(colon >= 0 ? auth.slice(0, colon) : auth) || undefined;
      password = colon >= 0 ? decodeURIComponent(auth.slice(colon + 1)) || undefined : undefined;
    } catch {
      throw new Refused('the user or password of the cluster URL is not well percent-encoded');
    }
  }
  if (rest === '') throw new Refused('a cluster URL names at least one node (redis+cluster://host:port,host:port)');
  const seeds = rest.split(',').map((seed, i) => clusterSeed(seed, i + 1));
  return { kind: 'cluster', seeds, tls: scheme[1].toLowerCase() === 'rediss', username, password };
}

function clusterSeed(seed: string, position: number): { host: string; port: number } {
  const match = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::(\d{1,5}))?$/.exec(seed);
  if (!match) throw new Refused(`cluster node ${position} ("${seed.slice(0, 100)}") is not host or host:port`);
  const port = match[2] === undefined ? 6379 : Number(match[2]);
  if (port < 1 || port > 65_535) throw new Refused(`cluster node ${position} has port ${match[2]}, outside 1-65535`);
  return { host: match[1].replace(/^\[(.*)\]$/, '$1'), port };
}

/** Whether a key prefix carries a Redis hash tag (a non-empty `{...}`): every key under it then hashes to one slot. */
export function hasHashTag(prefix: string): boolean {
  const open = prefix.indexOf('{');
  if (open < 0) return false;
  const close = prefix.indexOf('}', open + 1);
  return close > open + 1;
}

/**
 * The prefix with its hash tag's braces taken out: for keys that must NOT share the queues' slot
 * (rate-limit counters, each a single key, spread over the cluster by their own names).
 */
export function withoutHashTag(prefix: string): string {
  return prefix.replace(/[{}]/g, '');
}
