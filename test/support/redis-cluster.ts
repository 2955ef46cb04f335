import { ChildProcess, execFile, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { waitUntil } from './wait';

const REDIS_SERVER = process.env.REDIS_SERVER_PATH ?? '/usr/bin/redis-server';
const REDIS_CLI = process.env.REDIS_CLI_PATH ?? '/usr/bin/redis-cli';

/** One node of a test cluster: its loopback port, process and role when last read. */
export interface ClusterNode {
  port: number;
  /** `host:port`, as a seed for a cluster client. */
  address: string;
  process?: ChildProcess;
  /** Set when the test killed it. */
  killed?: boolean;
}

/**
 * A private Redis Cluster for one test file, from Debian's redis-server (installed with the
 * service's own Redis): `masters` masters with `replicasPerMaster` replicas each on free loopback
 * ports, no persistence, its files in a temporary directory. `url` is the form `REDIS_URL` takes
 * for a cluster (`redis+cluster://` and every node as a seed).
 */
export class RedisCluster {
  private constructor(
    readonly dir: string,
    readonly nodes: ClusterNode[],
    private readonly masters: number,
  ) {}

  static async start({ masters = 3, replicasPerMaster = 1 }: { masters?: number; replicasPerMaster?: number } = {}): Promise<RedisCluster> {
    const dir = mkdtempSync(join(tmpdir(), 'mss-redis-cluster-'));
    const count = masters * (1 + replicasPerMaster);
    const nodes: ClusterNode[] = [];
    for (let i = 0; i < count; i += 1) {
      const port = await clusterPort(nodes.map((n) => n.port));
      nodes.push({ port, address: `127.0.0.1:${port}` });
    }
    const cluster = new RedisCluster(dir, nodes, masters);
    try {
      for (const node of nodes) cluster.startNode(node);
      await waitUntil(() => nodes.every((n) => cluster.cli(n.port, 'PING').stdout.trim() === 'PONG'), 'every cluster node to answer PING', {
        timeoutMs: 15_000,
      });
      const create = spawnSync(
        REDIS_CLI,
        ['--cluster', 'create', ...nodes.map((n) => n.address), '--cluster-replicas', String(replicasPerMaster), '--cluster-yes'],
        { encoding: 'utf8', timeout: 60_000 },
      );
      if (create.status !== 0) throw new Error(`redis-cli --cluster create failed: ${create.stdout}\n${create.stderr}`);
      await cluster.waitHealthy();
    } catch (error) {
      await cluster.stop();
      throw error;
    }
    return cluster;
  }

  /** `redis+cluster://` with every node as a seed: what REDIS_URL names for this cluster. */
  get url(): string {
    return `redis+cluster://${this.nodes.map((n) => n.address).join(',')}`;
  }

  /** Runs one redis-cli command against a node. */
  cli(port: number, ...args: string[]): { status: number | null; stdout: string } {
    const result = spawnSync(REDIS_CLI, ['-h', '127.0.0.1', '-p', String(port), ...args], { encoding: 'utf8', timeout: 10_000 });
    return { status: result.status, stdout: result.stdout ?? '' };
  }

  /**
   * `cli` without blocking the event loop: what a test does while the cluster changes (a failover
   * under traffic) must not stall its own clients and receivers meanwhile.
   */
  cliAsync(port: number, ...args: string[]): Promise<{ stdout: string }> {
    return new Promise((resolve) => {
      execFile(REDIS_CLI, ['-h', '127.0.0.1', '-p', String(port), ...args], { encoding: 'utf8', timeout: 10_000 }, (_error, stdout) =>
        resolve({ stdout: stdout ?? '' }),
      );
    });
  }

  /** The port of the master that owns `key`'s slot (a hash tag counts, as in Redis). */
  masterOf(key: string): number {
    const slot = Number(this.cli(this.nodes[0].port, 'CLUSTER', 'KEYSLOT', key).stdout.trim());
    const port = this.mastersAndSlots().find((m) => m.slots.some(([from, to]) => slot >= from && slot <= to))?.port;
    if (port === undefined) throw new Error(`no master owns slot ${slot}`);
    return port;
  }

  /** A live master that does not own `key`'s slot: a single-node client pointed there gets MOVED. */
  masterNotOwning(key: string): number {
    const owner = this.masterOf(key);
    const other = this.mastersAndSlots().find((m) => m.port !== owner);
    if (!other) throw new Error('the cluster has one master');
    return other.port;
  }

  /** The live masters and the slot ranges each serves. */
  mastersAndSlots(): { port: number; slots: [number, number][] }[] {
    const lines = this.cli(this.live()[0].port, 'CLUSTER', 'NODES').stdout.trim().split('\n');
    return lines
      .map((line) => line.split(' '))
      .filter((f) => f.length > 8 && f[2].includes('master') && !f[2].includes('fail'))
      .map((f) => ({
        port: Number(f[1].split('@')[0].split(':')[1]),
        slots: f
          .slice(8)
          .filter((s) => !s.startsWith('['))
          .map((s) => {
            const [from, to] = s.split('-').map(Number);
            return [from, to ?? from] as [number, number];
          }),
      }));
  }

  /** How many slots hold at least one key, over every master: a check that keys are spread. */
  slotsInUse(): number {
    let used = 0;
    for (const { port, slots } of this.mastersAndSlots()) {
      // One redis-cli per master, its commands on standard input: a process per slot would take minutes.
      const commands = slots.flatMap(([from, to]) => Array.from({ length: to - from + 1 }, (_, i) => `CLUSTER COUNTKEYSINSLOT ${from + i}`));
      const result = spawnSync(REDIS_CLI, ['-h', '127.0.0.1', '-p', String(port)], { input: commands.join('\n'), encoding: 'utf8', timeout: 60_000 });
      used += (result.stdout ?? '').split('\n').filter((line) => Number(line.trim()) > 0).length;
    }
    return used;
  }

  /**
   * Fails the master that owns `key` over to its replica as an operator would: `CLUSTER FAILOVER`
   * on the replica, then the old master killed. Resolves once the cluster is healthy again with
   * the replica as master; answers the new master's port.
   */
  async failOver(key: string): Promise<number> {
    const oldMaster = this.masterOf(key);
    const id = (await this.cliAsync(oldMaster, 'CLUSTER', 'MYID')).stdout.trim();
    let replica: ClusterNode | undefined;
    for (const n of this.live()) {
      if (n.port === oldMaster) continue;
      const nodes = (await this.cliAsync(n.port, 'CLUSTER', 'NODES')).stdout;
      if (nodes.split('\n').some((l) => l.includes('myself') && l.includes(`slave ${id}`))) replica = n;
    }
    if (!replica) throw new Error(`master ${oldMaster} has no replica`);
    const done = await this.cliAsync(replica.port, 'CLUSTER', 'FAILOVER');
    if (done.stdout.trim() !== 'OK') throw new Error(`CLUSTER FAILOVER on ${replica.port}: ${done.stdout}`);
    const promoted = replica;
    await waitUntil(async () => (await this.cliAsync(promoted.port, 'ROLE')).stdout.startsWith('master'), `replica ${promoted.port} to become master`, {
      timeoutMs: 30_000,
    });
    this.kill(oldMaster);
    await this.waitHealthy();
    return promoted.port;
  }

  /** Kills one node's process (SIGKILL). */
  kill(port: number): void {
    const node = this.nodes.find((n) => n.port === port);
    if (node) node.killed = true;
    node?.process?.kill('SIGKILL');
  }

  /** The nodes the test has not killed. */
  live(): ClusterNode[] {
    return this.nodes.filter((n) => !n.killed);
  }

  /**
   * Waits until every live node reports cluster_state:ok and sees `masters` masters serving slots
   * and the other live nodes as their replicas.
   */
  async waitHealthy(masters = this.masters): Promise<void> {
    const healthy = async (port: number): Promise<boolean> => {
      if (!(await this.cliAsync(port, 'CLUSTER', 'INFO')).stdout.includes('cluster_state:ok')) return false;
      const known = (await this.cliAsync(port, 'CLUSTER', 'NODES')).stdout
        .trim()
        .split('\n')
        .map((l) => l.split(' '))
        .filter((f) => f.length >= 8 && !f[2].includes('fail'));
      const serving = known.filter((f) => f[2].includes('master') && f.length > 8).length;
      const replicas = known.filter((f) => f[2].includes('slave')).length;
      return serving === masters && replicas === this.live().length - masters;
    };
    await waitUntil(
      async () => {
        for (const n of this.live()) if (!(await healthy(n.port))) return false;
        return true;
      },
      'the Redis Cluster to report cluster_state:ok on every live node, its masters serving and the rest replicating',
      { timeoutMs: 60_000 },
    );
  }

  async stop(): Promise<void> {
    await Promise.all(
      this.nodes.map(
        (n) =>
          new Promise<void>((resolve) => {
            const child = n.process;
            if (!child || child.exitCode !== null || child.signalCode !== null) return resolve();
            n.killed = true;
            child.once('exit', () => resolve());
            child.kill('SIGKILL');
          }),
      ),
    );
    rmSync(this.dir, { recursive: true, force: true });
  }

  private startNode(node: ClusterNode): void {
    node.process = spawn(
      REDIS_SERVER,
      [
        '--port',
        String(node.port),
        '--bind',
        '127.0.0.1',
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        join(this.dir, `nodes-${node.port}.conf`),
        '--cluster-node-timeout',
        '2000',
        '--dir',
        this.dir,
        '--save',
        '',
        '--appendonly',
        'no',
        '--daemonize',
        'no',
      ],
      { stdio: 'ignore' },
    );
  }
}

/** Whether a loopback TCP port can be listened on now. */
function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A free port whose cluster bus port (port + 10000) is free too, below 55536, not one of `taken`. */
async function clusterPort(taken: number[]): Promise<number> {
  for (let tries = 0; tries < 200; tries += 1) {
    const port = 20_000 + Math.floor(Math.random() * 30_000);
    if (taken.some((t) => Math.abs(t - port) < 1 || t + 10_000 === port || port + 10_000 === t)) continue;
    if ((await canListen(port)) && (await canListen(port + 10_000))) return port;
  }
  throw new Error('no free port pair for a Redis Cluster node');
}
