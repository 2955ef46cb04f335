import { randomUUID } from 'node:crypto';
import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager, EntitySubscriberInterface, QueryRunner, TransactionCommitEvent } from 'typeorm';
import { AuditEventsRepository, AuditRow } from './audit-events.repository';
import { SqlCondition } from '../database/sql';
import { Clock } from '../common/clock';
import { AuditOutcome } from './audit-event.entity';
import { AuditCall, AuditCallInit, AuditTargets, AuditVerdict, currentAuditCall, runInAuditCall } from './audit-call';

/** A detail is a short note, never more. */
const MAX_DETAIL = 200;

/**
 * Records changing calls (docs/decisions.md, "The audit trail"). A surface opens a call and runs
 * the work inside it (`run`); the first transaction that commits inside the call writes the row
 * through that transaction's own query runner, just before COMMIT (beforeTransactionCommit), so
 * the change and its record commit together or not at all. When the call ends (`finish`), a call
 * that committed nothing gets its row then (a refusal, a failure, or a change made without a
 * transaction), and a row already written is completed with the result's ids and, should the
 * call fail after its commit, the failure.
 */
@Injectable()
export class AuditTrail implements OnModuleInit, EntitySubscriberInterface {
  private readonly logger = new Logger(AuditTrail.name);
  /** Actions already said to have changed without a transaction (finish). */
  private readonly untransacted = new Set<string>();

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly clock: Clock,
    private readonly rows: AuditEventsRepository,
  ) {}

  onModuleInit(): void {
    this.dataSource.subscribers.push(this);
  }

  open(init: AuditCallInit): AuditCall {
    const call = new AuditCall(init, this.clock.now());
    call.carrier = (tx) => this.carry(call, tx);
    return call;
  }

  /**
   * The call's row as a CTE for a statement of `tx` to carry (claimAuditRow), when `tx` is the
   * outermost transaction and the first to write inside the call: one round trip fewer than the
   * INSERT before COMMIT. The row then is this transaction's, as if written at its commit (which
   * still adds ids named after it, and whose rollback leaves the row to the next one or to
   * finish). Null otherwise: nothing to carry.
   */
  private carry(call: AuditCall, tx: EntityManager): SqlCondition | null {
    const runner = tx.queryRunner;
    if (!call.open || call.rowId || !runner?.isTransactionActive || depthOf(runner) > 1) return null;
    const rowId = randomUUID();
    const sql = this.rows.insertCarried(rowOf(rowId, call, call.init.targets, 'ok', null, null), runner);
    call.rowId = rowId;
    call.pendingRunner = runner;
    return sql;
  }

  /** Runs `work` as part of `call`: its first committing transaction carries the call's row. */
  run<T>(call: AuditCall, work: () => Promise<T>): Promise<T> {
    return runInAuditCall(call, work);
  }

  /** Opens a call, runs `work` in it, and finishes it with `judge`'s verdict on the result or the error (rethrown). */
  async record<T>(init: AuditCallInit, work: () => Promise<T>, judge: (outcome: { result: T } | { error: unknown }) => AuditVerdict): Promise<T> {
    const call = this.open(init);
    let result: T;
    try {
      result = await this.run(call, work);
    } catch (error) {
      await this.finish(call, judge({ error }));
      throw error;
    }
    await this.finish(call, judge({ result }));
    return result;
  }

  /**
   * Ends a call. Never throws: the call's own answer stands (a row that cannot be written after
   * the fact is logged; a call that changed something already has its row from its commit).
   */
  async finish(call: AuditCall, verdict: AuditVerdict): Promise<void> {
    call.open = false;
    const targets = mergeTargets(call.init.targets, verdict.targets);
    const detail = verdict.detail ? verdict.detail.slice(0, MAX_DETAIL) : null;
    try {
      if (call.rowId && call.committed) {
        const grew = Object.keys(targets).length !== Object.keys(call.init.targets).length || JSON.stringify(targets) !== JSON.stringify(call.init.targets);
        if (verdict.outcome === 'ok' && !grew) return;
        await this.rows.complete(call.rowId, targets, verdict.outcome, verdict.errorCode ?? null, detail);
        return;
      }
      if (verdict.outcome === 'ok' && !this.untransacted.has(call.init.action)) {
        // A change made outside any transaction: its row could not be part of it. Said once per action, to be made transactional.
        this.untransacted.add(call.init.action);
        this.logger.log(`${call.init.action} succeeded without committing a transaction: its audit row is written after it, not with it`);
      }
      await this.rows.insert(rowOf(randomUUID(), call, targets, verdict.outcome, verdict.errorCode ?? null, detail));
    } catch (error) {
      this.logger.error(`the audit row of ${call.init.action} (${verdict.outcome}) could not be written: ${(error as Error).message}`);
    }
  }

  /**
   * TypeORM calls this before every COMMIT and savepoint release: the outermost commit of the
   * first transaction inside an open call writes the call's row through the same query runner.
   */
  async beforeTransactionCommit(event: TransactionCommitEvent): Promise<void> {
    const call = currentAuditCall();
    const runner = event.queryRunner;
    if (!call || depthOf(runner) > 1) return; // a savepoint: the outer transaction may still roll back
    if (call.rowId) {
      // Written earlier in this transaction by one of its statements (claimAuditRow): ids named since join it.
      if (call.pendingRunner === runner && call.lateTargets) {
        call.lateTargets = false;
        await this.rows.retarget(runner, call.rowId, call.init.targets);
      }
      return;
    }
    call.rowId = randomUUID(); // taken before the await: a concurrent transaction of the call writes no second row
    call.pendingRunner = runner;
    await this.rows.insert(rowOf(call.rowId, call, call.init.targets, 'ok', null, null), runner);
  }

  afterTransactionCommit(event: TransactionCommitEvent): void {
    const call = currentAuditCall() ?? undefined;
    if (call && call.pendingRunner === event.queryRunner && !event.queryRunner.isTransactionActive) {
      call.committed = true;
      call.pendingRunner = null;
    }
  }

  afterTransactionRollback(event: { queryRunner: QueryRunner }): void {
    // The transaction that carried the row did not commit: the next one (or finish) writes it.
    const call = currentAuditCall();
    if (call && call.pendingRunner === event.queryRunner && !call.committed) {
      call.rowId = null;
      call.pendingRunner = null;
      call.lateTargets = false;
    }
  }
}

function rowOf(id: string, call: AuditCall, targets: AuditTargets, outcome: AuditOutcome, errorCode: string | null, detail: string | null): AuditRow {
  return { id, ...call.init, at: call.at, targets, outcome, errorCode, detail };
}

function mergeTargets(a: AuditTargets, b: AuditTargets | undefined): AuditTargets {
  if (!b) return a;
  const merged: AuditTargets = { ...a };
  for (const [name, value] of Object.entries(b)) {
    const all = new Set([...[merged[name] ?? []].flat(), ...[value].flat()]);
    merged[name] = all.size === 1 ? [...all][0] : [...all];
  }
  return merged;
}

/** The runner's transaction depth (1 for the outermost transaction; TypeORM keeps it protected). */
function depthOf(runner: QueryRunner): number {
  return (runner as unknown as { transactionDepth?: number }).transactionDepth ?? 1;
}
