import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager, EntitySubscriberInterface, QueryRunner, TransactionCommitEvent, TransactionRollbackEvent } from 'typeorm';
import { EventKind } from './event-kinds';
import { DomainEvent, KeyedEvent, SqlEventData } from './domain-event';
import { OutboxRepository } from './outbox.repository';
import { activeTraceParent } from '../ops/tracing/traces';

/** Least time between two NOTIFYs of a process: commits within it share the next one. */
const NOTIFY_GAP_MS = 5;

/** Marks a transaction (its QueryRunner's `data`) that wrote outbox rows. */
const WROTE_OUTBOX = 'wroteOutbox';

/**
 * Publishing: the event is written to the outbox in the caller's transaction, so it exists
 * exactly when the change that caused it commits.
 *
 * Waking the relay: after such a transaction commits, a NOTIFY goes out on its own, coalesced
 * (one at a time per process, NOTIFY_GAP_MS apart; what commits meanwhile shares the next one). NOTIFY is not sent
 * inside the publishing transaction because PostgreSQL serialises the commits of every
 * transaction that notifies on one global lock, held while the commit is flushed: at about 100
 * inbound messages a second, ingest queued on it. The wake-up needs no durability (the relay
 * also polls), so it commits asynchronously. A lost wake-up costs latency, never an event.
 */
@Injectable()
export class EventBus implements OnModuleInit, EntitySubscriberInterface {
  private readonly logger = new Logger(EventBus.name);
  private notifying = false;
  private notifyAgain = false;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly outbox: OutboxRepository,
  ) {}

  onModuleInit(): void {
    this.dataSource.subscribers.push(this);
  }

  async publish<K extends EventKind>(event: DomainEvent<K>, manager: EntityManager): Promise<string> {
    return (await this.publishAll([event], manager))[0];
  }

  async publishAll(events: DomainEvent[], manager: EntityManager): Promise<string[]> {
    return this.write(events, manager, (traced) => this.outbox.insert(manager, traced));
  }

  /**
   * publishAll() for events whose data `source` builds in the database (one row per `dataKey`):
   * the data are stored without being read into Node, in the same one statement as the events.
   */
  async publishAllFrom(events: KeyedEvent[], source: SqlEventData, manager: EntityManager): Promise<string[]> {
    return this.write(events, manager, (traced) => this.outbox.insertFrom(manager, traced, source));
  }

  /** The rules of every publish: inside the change's transaction, traced, and the relay woken after its commit. */
  private async write<E extends { traceParent?: string | null }>(
    events: E[],
    manager: EntityManager,
    insert: (events: E[]) => Promise<string[]>,
  ): Promise<string[]> {
    if (events.length === 0) return [];
    const runner = manager.queryRunner;
    if (!runner?.isTransactionActive) {
      throw new Error('EventBus.publish must run inside the transaction of the change it reports');
    }
    const active = activeTraceParent();
    const ids = await insert(active ? events.map((e) => (e.traceParent ? e : { ...e, traceParent: active })) : events);
    runner.data = { ...runner.data, [WROTE_OUTBOX]: true };
    return ids;
  }

  /** TypeORM calls this after every commit, savepoint releases included. */
  afterTransactionCommit(event: TransactionCommitEvent): void {
    if (this.takeMark(event.queryRunner)) this.wakeRelay();
  }

  afterTransactionRollback(event: TransactionRollbackEvent): void {
    this.takeMark(event.queryRunner);
  }

  /** True once the outermost transaction that wrote outbox rows has ended. */
  private takeMark(runner: QueryRunner): boolean {
    if (runner.isTransactionActive || !runner.data?.[WROTE_OUTBOX]) return false;
    delete runner.data[WROTE_OUTBOX];
    return true;
  }

  private wakeRelay(): void {
    if (this.notifying) {
      this.notifyAgain = true;
      return;
    }
    this.notifying = true;
    this.outbox
      .notify()
      .catch((error: unknown) => this.logger.debug(`NOTIFY failed (the relay's poll will find the events): ${(error as Error).message}`))
      .finally(() => {
        if (!this.notifyAgain) {
          this.notifying = false;
          return;
        }
        this.notifyAgain = false;
        setTimeout(() => {
          this.notifying = false;
          this.wakeRelay();
        }, NOTIFY_GAP_MS).unref();
      });
  }
}
