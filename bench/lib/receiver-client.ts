import { join } from 'node:path';
import { Child, forkTs, stopChild } from './children';
import { waitUntil } from './util';

export interface ReceiverProgress {
  total: number;
  unique: number;
  verified: number;
  badSignature: number;
  noSecret: number;
  /** Requests per behaviour: ok, fail, hang, other. */
  byKind: number[];
  /** First arrivals (distinct envelope ids) per behaviour. */
  uniqueByKind: number[];
  answered2xx: number;
  openHangs: number;
  badExamples: string[];
}

export interface WindowQuery {
  recvFrom?: number;
  recvTo?: number;
  createdFrom?: number;
  createdTo?: number;
  kind?: 'ok' | 'fail' | 'hang';
  latencies?: boolean;
}

export interface WindowStats {
  requests: number;
  ok2xx: number;
  firsts: number;
  dups: number;
  byKind: Record<'ok' | 'fail' | 'hang' | 'other', number>;
  latencies?: number[];
}

export interface Sample {
  port: number;
  path: string;
  headers: Record<string, string>;
  body: string;
}

/** The receiver child process, driven over IPC. */
export class Receiver {
  private nextId = 1;
  private readonly pending = new Map<number, (value: unknown) => void>();
  ports: number[] = [];

  private constructor(
    readonly child: Child,
    private readonly host: string,
  ) {
    child.proc.on('message', (message: { id?: number; result?: unknown; ready?: boolean; ports?: number[] }) => {
      if (message.ready) {
        this.ports = message.ports ?? [];
        return;
      }
      const resolve = message.id === undefined ? undefined : this.pending.get(message.id);
      if (resolve) {
        this.pending.delete(message.id!);
        resolve(message.result);
      }
    });
  }

  static async start(root: string, ports: number, failOkEvery: number, host = '127.0.0.1'): Promise<Receiver> {
    const child = forkTs(
      'receiver',
      join(root, 'bench/receiver.ts'),
      {
        ...process.env,
        RECEIVER_PORTS: String(ports),
        FAIL_OK_EVERY: String(failOkEvery),
      },
      root,
    );
    const receiver = new Receiver(child, host);
    await waitUntil('the receiver to listen', async () => receiver.ports.length === ports || child.exitCode !== undefined, 30_000, 50);
    if (child.exitCode !== undefined) throw new Error(`the receiver exited (${child.exitCode}); see ${child.logFile}`);
    return receiver;
  }

  get pid(): number {
    return this.child.pid;
  }

  url(index: number, path: string): string {
    return `http://${this.host}:${this.ports[index % this.ports.length]}${path}`;
  }

  private call<T>(command: object): Promise<T> {
    const id = this.nextId++;
    if (!this.child.proc.connected) return Promise.reject(new Error('the receiver has exited'));
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`receiver did not answer ${JSON.stringify(command).slice(0, 60)}`));
      }, 60_000);
      this.pending.set(id, (value) => {
        clearTimeout(timer);
        resolve(value as T);
      });
      this.child.proc.send({ id, command }, (error) => {
        if (!error) return;
        clearTimeout(timer);
        this.pending.delete(id);
        reject(error);
      });
    });
  }

  reset = () => this.call<{ ok: boolean }>({ cmd: 'reset' });
  config = (options: { failOkEvery?: number; hangMs?: number }) => this.call({ cmd: 'config', ...options });
  setSecrets = (entries: Array<[string, string[]]>) => this.call({ cmd: 'secrets', entries });
  progress = () => this.call<ReceiverProgress>({ cmd: 'progress' });
  window = (query: WindowQuery) => this.call<WindowStats>({ cmd: 'window', query });
  capture = (count: number) => this.call({ cmd: 'capture', count });
  samples = () => this.call<Sample[]>({ cmd: 'samples' });
  perPath = () => this.call<Record<string, number>>({ cmd: 'perPath' });

  stop(): Promise<void> {
    return stopChild(this.child, 3000);
  }
}
