import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { NotFoundError } from '../common/errors';
import { Hooks } from '../common/hooks';
import { MicroBatcher } from '../common/micro-batcher';
import { EventBus } from '../events/event-bus';
import { ServiceMetrics } from '../ops/metrics/service-metrics';
import { Channel, IdentityKind } from './conversation-vocabulary';
import { InboundAttachment, InboundAttachments } from './inbound-attachments';
import { MessageDataBuilder } from './message-data.builder';
import { ConversationsRepository, InboundLine, NewInboundMessage } from './conversations.repository';
import { activeTraceParent, inSpan } from '../ops/tracing/traces';
import { LinesRepository } from '../identity/lines.repository';

/** Thrown inside the transaction to roll it back when the provider message id was stored before. */
class RepeatedInbound extends Error {
  constructor(readonly line: InboundLine) {
    super('this provider message id was recorded before');
  }
}

/** Thrown inside a batch's transaction to roll it back: its SMS are recorded one by one instead. */
class BatchFallsBack extends Error {}

/** Most inbound SMS recorded in one transaction, and most such transactions at once. */
const SMS_BATCH = 64;
const SMS_BATCHES_IN_FLIGHT = 4;

/** What a batch answers for one SMS: its result, its own error, or "record it alone". */
type BatchedSms = { result: InboundResult } | { error: Error } | 'alone';

export type { InboundAttachment } from './inbound-attachments';

export interface InboundMessage {
  /** The receiving line's address: an E.164 number or an email address. */
  to: string;
  channel: Channel;
  from: { kind: IdentityKind; value: string; displayName?: string | null };
  body: string;
  html?: string | null;
  subject?: string | null;
  providerMessageId: string;
  email?: {
    messageId: string | null;
    inReplyTo: string | null;
    references: string[];
    listUnsubscribe: string | null;
    spf: string | null;
    dkim: string | null;
    dmarc: string | null;
  };
  attachments: InboundAttachment[];
}

/** An SMS waiting for a shared transaction, with the span it arrived in (its events belong to that trace, not the batch's). */
type TracedInbound = InboundMessage & { traceParent: string | null };

/** What the first part of recording an inbound message stored. */
interface StoredInbound {
  line: InboundLine;
  threadId: string;
  created: boolean;
  messageId: string;
}

export interface InboundResult {
  messageId: string;
  threadId: string;
  threadCreated: boolean;
  duplicate: boolean;
  attachmentIds: string[];
}

/**
 * Conversations: threads and their messages. Every change that the spec reports as an event
 * publishes it in the same transaction.
 */
@Injectable()
export class ConversationsService {
  private readonly logger = new Logger(ConversationsService.name);
  /** Run after an inbound message is recorded (committed), and again for a repeat of it (attachment extraction enqueues). */
  readonly inboundRecorded = new Hooks<[result: InboundResult]>('inbound message recorded');

  /** Concurrent inbound SMS without media, recorded together: one per thread in a batch. */
  private readonly smsBatches = new MicroBatcher<TracedInbound, BatchedSms>(
    (batch) => this.recordSmsBatch(batch),
    SMS_BATCH,
    SMS_BATCHES_IN_FLIGHT,
    (input) => `${input.to}\n${input.from.kind}\n${input.from.value}`,
  );

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly conversations: ConversationsRepository,
    private readonly lines: LinesRepository,
    private readonly bus: EventBus,
    private readonly data: MessageDataBuilder,
    private readonly attachments: InboundAttachments,
    private readonly metrics: ServiceMetrics,
  ) {}

  /**
   * Records an inbound SMS or email once per provider message id: finds or creates the partner's
   * identity (an orphan until a contact claims it) and the thread, stores the message and its
   * attachments, and publishes thread.created (first message from an unknown partner) and
   * message.received.
   */
  recordInbound(input: InboundMessage): Promise<InboundResult> {
    return inSpan('message ingest', { attributes: { 'message.channel': input.channel } }, async (span) => {
      let result: InboundResult;
      try {
        result = input.channel === 'SMS' && input.attachments.length === 0 ? await this.recordBatched(input) : await this.record(input);
      } catch (error) {
        this.metrics.messageIngested(input.channel, 'rejected');
        throw error;
      }
      this.metrics.messageIngested(input.channel, result.duplicate ? 'duplicate' : 'recorded');
      span?.setAttributes({ 'message.id': result.messageId, 'message.thread_id': result.threadId, 'message.duplicate': result.duplicate });
      await this.inboundRecorded.run(result);
      return result;
    });
  }

  /**
   * An SMS without media, in a transaction shared with the SMS that arrive meanwhile (one commit
   * and five round trips for the lot instead of each): recorded exactly as alone would.
   */
  private async recordBatched(input: InboundMessage): Promise<InboundResult> {
    const outcome = await this.smsBatches.submit({ ...input, traceParent: activeTraceParent() });
    if (outcome === 'alone') return this.record(input);
    if ('error' in outcome) throw outcome.error;
    return outcome.result;
  }

  /**
   * One transaction for SMS of distinct threads: every row, every event data and every outbox row
   * in one statement each. A batch with a repeat of a provider message id (whose thread the
   * statement counted) rolls back, as does one that failed for any reason (a deadlock with another
   * batch, say), and its SMS are recorded one by one, each with its own answer.
   */
  private async recordSmsBatch(batch: TracedInbound[]): Promise<BatchedSms[]> {
    if (batch.length === 1) return ['alone'];
    // Row locks in one order across concurrent batches: by line, then partner.
    const order = batch.map((_, i) => i).sort((a, b) => compareThreadKeys(batch[a], batch[b]));
    const sorted = order.map((i) => batch[i]);
    try {
      const rows = await this.dataSource.transaction(async (tx) => {
        const recorded = await this.conversations.recordSmsMany(
          tx,
          sorted.map((input) => ({ lineAddress: input.to, partner: input.from, message: this.newMessage(input) })),
        );
        if (recorded.some((row) => !row.message_id)) throw new BatchFallsBack('a repeated provider message id');
        await this.bus.publishAllFrom(
          recorded.flatMap((row) =>
            inboundEvents(row.thread_inserted).map((type) => ({
              type,
              orgId: row.org_id,
              lineId: row.line_id,
              dataKey: row.message_id!,
              traceParent: sorted[row.index].traceParent,
            })),
          ),
          this.data.source(recorded.map((row) => row.message_id!)),
          tx,
        );
        return recorded;
      });
      const outcomes: Array<BatchedSms | undefined> = new Array(sorted.length);
      for (const row of rows) {
        outcomes[row.index] = {
          result: { messageId: row.message_id!, threadId: row.thread_id, threadCreated: row.thread_inserted, duplicate: false, attachmentIds: [] },
        };
      }
      // An SMS the statement recorded no row for went to no live line (an error is made only for those: its stack costs).
      const answers: BatchedSms[] = new Array(batch.length);
      order.forEach((original, k) => (answers[original] = outcomes[k] ?? { error: noLine(sorted[k]) }));
      return answers;
    } catch (error) {
      if (!(error instanceof BatchFallsBack)) this.logger.debug(`a batch of ${batch.length} inbound SMS is recorded one by one: ${(error as Error).message}`);
      return batch.map(() => 'alone');
    }
  }

  /**
   * One transaction; a repeat of a provider message id (even one racing the first) meets the
   * unique index, waits for the first to commit, and rolls back to answer what the first stored.
   */
  private async record(input: InboundMessage): Promise<InboundResult> {
    try {
      return await this.dataSource.transaction(async (tx) => {
        const { line, threadId, created, messageId } = input.channel === 'SMS' ? await this.storeSms(tx, input) : await this.storeEmail(tx, input);
        const attachmentIds = await this.attachments.storeInbound(tx, line.org_id, messageId, input.attachments);

        await this.bus.publishAllFrom(
          inboundEvents(created).map((type) => ({ type, orgId: line.org_id, lineId: line.id, dataKey: messageId })),
          this.data.source([messageId]),
          tx,
        );
        return { messageId, threadId, threadCreated: created, duplicate: false, attachmentIds };
      });
    } catch (error) {
      if (!(error instanceof RepeatedInbound)) throw error;
      return this.recorded(error.line, input.providerMessageId);
    }
  }

  /** An SMS: line, partner, thread and message in one statement (ConversationsRepository.recordSmsMany). */
  private async storeSms(tx: EntityManager, input: InboundMessage): Promise<StoredInbound> {
    const [row] = await this.conversations.recordSmsMany(tx, [{ lineAddress: input.to, partner: input.from, message: this.newMessage(input) }]);
    if (!row) throw noLine(input);
    const line = { id: row.line_id, org_id: row.org_id };
    if (!row.message_id) throw new RepeatedInbound(line);
    return { line, threadId: row.thread_id, created: row.thread_inserted, messageId: row.message_id };
  }

  /** An email: its line, then its thread (by its reply headers, or a new one), then the message. */
  private async storeEmail(tx: EntityManager, input: InboundMessage): Promise<StoredInbound> {
    const live = await this.lines.liveLineByAddress(input.to, 'EMAIL_ACCOUNT', tx);
    if (!live) throw noLine(input);
    const line: InboundLine = { id: live.id, org_id: live.org_id };
    const { threadId, created } = await this.findEmailThread(tx, line, input);
    const message = await this.conversations.insertInbound(tx, line, threadId, this.newMessage(input));
    if (!message) throw new RepeatedInbound(line);
    return { line, threadId, created, messageId: message.id };
  }

  private newMessage(input: InboundMessage): NewInboundMessage {
    return {
      channel: input.channel,
      body: input.body,
      html: input.html ?? null,
      subject: input.subject ?? null,
      fromValue: input.from.value,
      fromKind: input.from.kind,
      toValue: input.to,
      toKind: input.channel === 'SMS' ? 'PHONE' : 'EMAIL',
      providerMessageId: input.providerMessageId,
      headerMessageId: input.email?.messageId ?? null,
      headerInReplyTo: input.email?.inReplyTo ?? null,
      headerReferences: input.email?.references ?? [],
      headerListUnsubscribe: input.email?.listUnsubscribe ?? null,
      authSpf: input.email?.spf ?? null,
      authDkim: input.email?.dkim ?? null,
      authDmarc: input.email?.dmarc ?? null,
    };
  }

  /** What the first delivery of a provider message id stored. */
  private async recorded(line: InboundLine, providerMessageId: string): Promise<InboundResult> {
    const existing = await this.conversations.recordedInbound(line, providerMessageId);
    return { messageId: existing.id, threadId: existing.thread_id, threadCreated: false, duplicate: true, attachmentIds: existing.attachment_ids };
  }

  /**
   * The partner's identity (created as an orphan when new) and the email's thread: the thread of
   * the message this one replies to (In-Reply-To, then References, on the same line), else a new one.
   */
  private async findEmailThread(tx: EntityManager, line: InboundLine, input: InboundMessage): Promise<{ threadId: string; created: boolean }> {
    const partnerIdentityId = await this.conversations.upsertIdentity(tx, line, input.from);
    const candidates = [input.email?.inReplyTo, ...[...(input.email?.references ?? [])].reverse()].filter((v): v is string => !!v);
    if (candidates.length > 0) {
      const match = await this.conversations.threadByHeaderMessageId(tx, line, candidates);
      if (match) return { threadId: match, created: false };
    }
    const threadId = await this.conversations.insertEmailThread(tx, line, partnerIdentityId, input.subject ?? null);
    return { threadId, created: true };
  }
}

/** What recording an inbound message publishes: a first message from a partner also starts the thread. */
function inboundEvents(threadCreated: boolean): ReadonlyArray<'thread.created' | 'message.received'> {
  return threadCreated ? ['thread.created', 'message.received'] : ['message.received'];
}

/** Inbound SMS by line address, then partner: the order of their rows' locks. */
function compareThreadKeys(a: InboundMessage, b: InboundMessage): number {
  return a.to < b.to ? -1 : a.to > b.to ? 1 : a.from.value < b.from.value ? -1 : a.from.value > b.from.value ? 1 : 0;
}

function noLine(input: InboundMessage): NotFoundError {
  return new NotFoundError(`no ${input.channel === 'SMS' ? 'phone number' : 'email account'} line has the address ${input.to}`, 'to');
}
