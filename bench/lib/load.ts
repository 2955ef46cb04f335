import { randomBytes } from 'node:crypto';
import { Pool } from 'undici';
import { uniquePhone } from './api';
import { sleep } from './util';

export interface IngestTarget {
  /** The line's E.164 address (the `to` of the inbound SMS). */
  to: string;
  /** Partner numbers the messages come from, round-robin (a new one starts a thread). */
  partners: string[];
}

export function makeTargets(lines: string[], partnersPerLine: number): IngestTarget[] {
  return lines.map((to) => ({ to, partners: Array.from({ length: partnersPerLine }, () => uniquePhone('partner')) }));
}

/**
 * The load generator: inbound SMS POSTed to /ingest/sms/inbound with the ingest token, over an
 * undici Pool of `concurrency` connections (the carrier's side of the real ingest path).
 */
export class Ingestor {
  readonly pool: Pool;
  accepted = 0;
  failed = 0;
  lastError = '';
  /** Accepted counts with the time they were accepted, for rates over a window. */
  private readonly acceptedAt: number[] = [];
  /** When each accepted request was sent (wall clock), in the same order. */
  private readonly acceptedSentAt: number[] = [];
  /** How long each accepted request took (ms), in the order they were accepted. */
  readonly acceptedMs: number[] = [];
  private seq = 0;
  private readonly runTag = randomBytes(4).toString('hex');
  private readonly text: string;

  constructor(
    baseUrl: string,
    private readonly token: string,
    readonly concurrency: number,
    smsBytes: number,
  ) {
    this.pool = new Pool(baseUrl, { connections: concurrency, keepAliveTimeout: 30_000, pipelining: 1 });
    const words = 'Hi, running about ten minutes late, can we push the call to 3:30? Thanks! ';
    this.text = words.repeat(Math.ceil(smsBytes / words.length)).slice(0, smsBytes);
  }

  async sendOne(target: IngestTarget): Promise<boolean> {
    this.seq += 1;
    const n = this.seq;
    const body = JSON.stringify({
      to: target.to,
      from: target.partners[n % target.partners.length],
      body: this.text,
      providerMessageId: `bench-${this.runTag}-${n}`,
    });
    const started = performance.now();
    const sentAt = Date.now();
    try {
      const res = await this.pool.request({
        method: 'POST',
        path: '/ingest/sms/inbound',
        headers: { authorization: `Bearer ${this.token}`, 'content-type': 'application/json' },
        body,
        headersTimeout: 60_000,
        bodyTimeout: 60_000,
      });
      const text = await res.body.text();
      if (res.statusCode === 201) {
        this.accepted += 1;
        this.acceptedAt.push(Date.now());
        this.acceptedSentAt.push(sentAt);
        this.acceptedMs.push(performance.now() - started);
        return true;
      }
      this.failed += 1;
      this.lastError = `${res.statusCode} ${text.slice(0, 200)}`;
    } catch (error) {
      this.failed += 1;
      this.lastError = (error as Error).message;
    }
    return false;
  }

  acceptedBetween(from: number, to: number): number {
    let count = 0;
    for (const t of this.acceptedAt) if (t >= from && t < to) count += 1;
    return count;
  }

  /**
   * The accepted requests whose event was surely created between `from` and `to`: sent at or
   * after `from` and answered before `to` (the service stamps createdAt in between). A request in
   * flight across either edge may fall on either side, so it is left out of the count.
   */
  createdSurelyBetween(from: number, to: number): number {
    let count = 0;
    this.acceptedAt.forEach((t, i) => {
      if (this.acceptedSentAt[i] >= from && t < to) count += 1;
    });
    return count;
  }

  /** How long the requests accepted between `from` and `to` took (ms). */
  durationsBetween(from: number, to: number): number[] {
    const out: number[] = [];
    this.acceptedAt.forEach((t, i) => {
      if (t >= from && t < to) out.push(this.acceptedMs[i]);
    });
    return out;
  }

  /**
   * Closed loop: `concurrency` senders, each sending as soon as its previous request answered,
   * while `gate()` allows (the harness keeps the delivery backlog bounded), until `until`.
   */
  async closedLoop(targets: IngestTarget[], until: () => boolean, gate: () => boolean): Promise<void> {
    let turn = 0;
    const sender = async () => {
      while (!until()) {
        if (!gate()) {
          await sleep(5);
          continue;
        }
        turn += 1;
        await this.sendOne(targets[turn % targets.length]);
      }
    };
    await Promise.all(Array.from({ length: this.concurrency }, sender));
  }

  /**
   * Open loop at a fixed rate: request i is due at start + i/rate, whatever the previous answers
   * (at most `concurrency` in flight; a send that had to wait for a free slot counts as late).
   */
  async fixedRate(targets: IngestTarget[], ratePerSecond: number, durationMs: number): Promise<{ planned: number; sent: number; late: number }> {
    const start = performance.now();
    const deadline = start + durationMs;
    const planned = Math.floor((ratePerSecond * durationMs) / 1000);
    let inFlight = 0;
    let late = 0;
    let sent = 0;
    const running = new Set<Promise<unknown>>();
    for (let i = 0; i < planned; i += 1) {
      const due = start + (i * 1000) / ratePerSecond;
      const wait = due - performance.now();
      if (wait > 1) await sleep(wait);
      if (inFlight >= this.concurrency) {
        late += 1;
        await Promise.race(running);
      }
      // A generator that fell behind stops at the end of the window rather than stretching it.
      if (performance.now() >= deadline) break;
      inFlight += 1;
      sent += 1;
      const p: Promise<unknown> = this.sendOne(targets[i % targets.length]).finally(() => {
        inFlight -= 1;
        running.delete(p);
      });
      running.add(p);
    }
    await Promise.all(running);
    return { planned, sent, late };
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
