import { createHash, randomUUID } from 'node:crypto';
import { InjectQueue } from '@nestjs/bull';
import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { Queue } from 'bull';
import { DataSource, EntityManager } from 'typeorm';
import { Principal } from '../../identity/principal';
import { ConflictError, NotFoundError, ValidationError } from '../../common/errors';
import { DomainEvent } from '../../events/domain-event';
import { EventBus } from '../../events/event-bus';
import { SerializedMessage } from '../conversation-vocabulary';
import { MessageDataBuilder } from '../message-data.builder';
import { newMessageId, replyReferences, replySubject } from './email-format';
import { OutboundChannels } from './outbound-channels';
import { CallerThread, ThreadAccessRepository } from '../threads/thread-access.repository';
import { HandOffRow, OutboundRepository, QueuedMessage } from './outbound.repository';
import { MessageStatus } from '../message.entity';
import { ClaimedKeyRow, SendIdempotencyKeysRepository } from './send-idempotency-keys.repository';
import { checkReplyBody } from './reply-body';
import { sendingLine } from './sending-line';
import { SendGate } from './send-gate';
import { GateRead, GateReadRow, gateReadOf } from './send-gate.repository';
import { DraftHolds } from './draft-holds';
import { originOf, SendOrigin } from './send-origin';
import { claimAuditRow, noteAuditTargets } from '../../audit/audit-call';
import { rolledBack } from '../../database/sql';
import { sendAtOf } from './send-at';

export const OUTBOUND_QUEUE = 'outbound-messages';

/** Attempts to hand a message over before it is FAILED (transient carrier or mail server errors). */
export const HANDOFF_ATTEMPTS = 5;

/** A job of the outbound queue: hand the message over, or (`due`) a scheduled message whose time has come (ScheduledSends.release). */
export interface OutboundJob {
  messageId: string;
  due?: boolean;
}

/** How long a send tool's idempotencyKey answers with its first message (docs/mcp.md, "Sending once"). */
export const IDEMPOTENCY_KEY_LIVE_MS = 24 * 60 * 60 * 1000;

/** A send tool's call: its name and validated arguments (the idempotency key among them, if given). */
export interface SendCall {
  tool: string;
  args: { idempotencyKey?: string; sendAt?: string } & Record<string, unknown>;
}

/** send_sms's arguments: on a thread (threadId, identityId?) or to a number (to, lineId? or from?); the text as smsBody or body. */
export interface SendSmsArgs {
  threadId?: string;
  identityId?: string;
  to?: string;
  lineId?: string;
  from?: string;
  smsBody?: string;
  body?: string;
  idempotencyKey?: string;
  sendAt?: string;
}

/**
 * What a send tool answers: the message, and with an idempotencyKey whether it is the key's earlier
 * message (nothing sent now); for a draft-only credential, the draft turn awaiting a person instead.
 */
export type SendOutcome = { message: SerializedMessage; replayed?: boolean } | { turn: object };

/**
 * Outbound messages: queued by a tool call, handed to the carrier or mail server by a job, then
 * moved by delivery reports. Each status change publishes message.status_changed; leaving QUEUED
 * also publishes message.sent (spec: message status table).
 */
@Injectable()
export class OutboundService {
  private readonly logger = new Logger(OutboundService.name);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @InjectQueue(OUTBOUND_QUEUE) private readonly queue: Queue<OutboundJob>,
    private readonly bus: EventBus,
    private readonly data: MessageDataBuilder,
    private readonly channels: OutboundChannels,
    private readonly threads: ThreadAccessRepository,
    private readonly messages: OutboundRepository,
    private readonly keys: SendIdempotencyKeysRepository,
    private readonly gate: SendGate,
    private readonly drafts: DraftHolds,
  ) {}

  /**
   * send_sms: an SMS on the thread, to `identityId` (the partner or another number of their
   * contact) or, without it, to the thread's partner; or, with `to` in place of `threadId`, to a
   * number, from one of the caller's phone lines (`lineId` or `from`; the only one when it has one),
   * on that line's thread with the number (made, with thread.created, if there is none). The text
   * is `smsBody` (the spec's name) or `body` (reply_to_thread's).
   */
  async queueSms(caller: Principal, call: SendCall & { args: SendSmsArgs }): Promise<SendOutcome> {
    const input = call.args;
    if ((input.threadId === undefined) === (input.to === undefined)) {
      throw new ValidationError('give exactly one of threadId (send on a thread) or to (text a number)', input.threadId ? 'to' : 'threadId');
    }
    if ((input.smsBody === undefined) === (input.body === undefined)) {
      throw new ValidationError('give the text as exactly one of body or smsBody (the same argument by two names)', 'body');
    }
    const text = (input.smsBody ?? input.body)!;
    if (input.threadId !== undefined) {
      const where = input.lineId !== undefined ? 'lineId' : input.from !== undefined ? 'from' : undefined;
      if (where) throw new ValidationError(`an SMS on a thread goes from the thread's own line; leave ${where} out`, where);
    } else if (input.identityId !== undefined) {
      throw new ValidationError('identityId picks a number of the thread partner: give it with threadId, not with to', 'identityId');
    }
    return this.send(caller, call, async (tx, sendAt) => {
      if (input.to !== undefined) return this.queueSmsTo(tx, caller, input.to, text, input, sendAt);
      const thread = await this.threads.threadForCaller(tx, caller, input.threadId!);
      if (thread.channel !== 'SMS') throw new ValidationError(`thread ${input.threadId} is an email thread; use send_email`, 'threadId');
      const { identityId } = input;
      const identity = identityId === undefined ? await this.messages.partner(tx, thread) : await this.messages.partnerIdentity(tx, caller, thread, identityId);
      if (!identity) {
        throw new ValidationError(`identityId ${identityId} is not the thread's partner or one of their identities`, 'identityId');
      }
      if (identity.kind !== 'PHONE') throw new ValidationError(`identity ${identityId} is not a phone number`, 'identityId');
      return this.insertQueued(tx, {
        orgId: caller.orgId,
        threadId: thread.id,
        lineId: thread.line_id,
        channel: 'SMS',
        body: text,
        from: { value: thread.line_address, kind: 'PHONE' },
        to: { value: identity.value, kind: 'PHONE' },
        origin: originOf(caller),
        sendAt,
      });
    });
  }

  /** send_sms with `to`: the line's thread with the number (thread.created when new), and the SMS on it. */
  private async queueSmsTo(tx: EntityManager, caller: Principal, to: string, body: string, input: SendSmsArgs, sendAt: Date | null): Promise<string> {
    const line = sendingLine(caller, {
      type: 'PHONE_NUMBER',
      noun: 'phone line',
      listTool: 'list_phone_numbers',
      idField: 'lineId',
      id: input.lineId,
      addressField: 'from',
      address: input.from,
    });
    const message = (threadId: string): QueuedMessage => ({
      orgId: caller.orgId,
      threadId,
      lineId: line.id,
      channel: 'SMS',
      body,
      from: { value: line.address, kind: 'PHONE' },
      to: { value: to, kind: 'PHONE' },
      origin: originOf(caller),
      sendAt,
    });
    // The send gate's read rides on the thread's upsert: one round trip fewer (the gate reads no thread).
    const thread = await this.messages.smsThread<GateReadRow>(tx, caller, line.id, to, this.gate.readColumns(message('')));
    const id = await this.insertQueued(tx, message(thread.id), gateReadOf(thread));
    if (thread.created) await this.threadStarted(tx, originOf(caller), id, caller.orgId, line.id);
    return id;
  }

  /** thread.created for a send that made its thread, with the message (`id`; a draft-only credential never makes one: holdDraft). */
  async threadStarted(tx: EntityManager, origin: SendOrigin, id: string, orgId: string, lineId: string): Promise<void> {
    if (origin.draftOnly) return;
    const data = await this.data.build(id, tx);
    await this.bus.publish({ type: 'thread.created', orgId, lineId, data }, tx);
  }

  /** reply_to_thread: the thread's partner answered on the thread's own channel (an SMS, or an email as queueReply writes it). */
  async queueThreadReply(caller: Principal, call: SendCall & { args: { threadId: string; body: string } }): Promise<SendOutcome> {
    const { threadId, body } = call.args;
    return this.send(caller, call, async (tx, sendAt) => {
      const thread = await this.threads.threadForCaller(tx, caller, threadId);
      checkReplyBody(thread.channel, body);
      return this.queueReply(tx, originOf(caller), caller.orgId, thread, body, sendAt);
    });
  }

  /**
   * A send tool's call: `insert` queues the message in a transaction, and the hand-off job is
   * enqueued once it has committed. With an idempotencyKey, the key is claimed in the same
   * transaction: a key used in the last 24 hours with the same tool and arguments answers its
   * first message (replayed, nothing queued), with other arguments it is refused. Calls that
   * fail queue nothing and leave the key unused. A repeat answers the first message only to a
   * caller who may see its line now (replayable).
   *
   * With `sendAt` (checked here, after the key: sendAtOf; a repeat answers its first message whatever the time now) `insert` gets its time and writes the message SCHEDULED
   * (QueuedMessage.sendAt): message.status_changed (null → SCHEDULED) is published with it, and
   * after the commit a delayed job releases it when due (ScheduledSends), in place of the hand-off.
   */
  async send(caller: Principal, call: SendCall, insert: (tx: EntityManager, sendAt: Date | null) => Promise<string>): Promise<SendOutcome> {
    const key = call.args.idempotencyKey;
    if (originOf(caller).draftOnly) return this.draft((tx) => insert(tx, sendAtOf(call.args.sendAt)));
    const { messageId, replayed, sendAt } = await this.dataSource.transaction(async (tx) => {
      // The limits' per-credential lock is taken as the last statement, held for the commit only.
      this.gate.deferLimits(tx);
      if (key !== undefined) {
        const first = await this.keys.claim(tx, caller.orgId, key, call.tool, requestDigest(call), IDEMPOTENCY_KEY_LIVE_MS);
        // A repeat answers the first message whatever the time is now: its sendAt may have passed since (a lost answer, retried later).
        if (first) return { messageId: await this.replayable(tx, caller, key, call, first, (t) => insert(t, sendAtOf(call.args.sendAt))), replayed: true };
      }
      const sendAt = sendAtOf(call.args.sendAt); // only a new send checks it; refused, the claim above rolls back with the transaction
      const id = await insert(tx, sendAt);
      if (sendAt) await this.publishStatusChanged(tx, id, null, 'SCHEDULED');
      if (key !== undefined) await this.keys.record(tx, caller.orgId, key, id);
      await this.gate.checkDeferredLimits(tx);
      return { messageId: id, replayed: false, sendAt };
    });
    if (!replayed) await this.dispatch(messageId, sendAt ?? null);
    const message = await this.view(messageId);
    return key === undefined ? { message } : { message, replayed };
  }

  /**
   * A draft-only credential's send: `insert` holds the message as a draft turn (insertQueued), and
   * the call answers that turn. Nothing is queued, so nothing is enqueued; an idempotencyKey is
   * not claimed (a key stands for a message, and no message is made: docs/mcp.md).
   */
  private async draft(insert: (tx: EntityManager) => Promise<string>): Promise<SendOutcome> {
    const turnId = await this.dataSource.transaction((tx) => insert(tx));
    return { turn: await this.drafts.get().view(turnId) };
  }

  /**
   * The message of a key's first call, for a repeat of that call. Keys are the org's, but the
   * first message is told only to a caller who may see its line now (callerLines). To anyone else
   * (a person of another line who came by the key, the sender after losing the line, a key scoped
   * to other lines) the key answers the same whatever the arguments, so it never confirms what was
   * written: the call is run as it would be without a key, under a savepoint rolled back at once,
   * so it fails with its own error (`thread … not found` for a thread they may not see), and where
   * it would have sent, the key is refused as one in use. Nothing is sent either way.
   */
  private async replayable(
    tx: EntityManager,
    caller: Principal,
    key: string,
    call: SendCall,
    first: ClaimedKeyRow,
    insert: (tx: EntityManager) => Promise<string>,
  ): Promise<string> {
    if (first.message_id === null || (await this.messages.onCallerLines(tx, caller, first.message_id))) return replayedMessage(key, call, first);
    await rolledBack(tx, () => insert(tx));
    throw new ConflictError(
      `idempotencyKey "${key}" is in use for another message; a key stands for one message: use a new key for a new message`,
      'idempotencyKey',
    );
  }

  /**
   * A reply to the thread's partner on the thread's own channel (agent turns): an SMS, or an email
   * with `Re:` subject, a new Message-ID and In-Reply-To/References answering the thread's latest
   * message (email-format's rules, as send_email). Inserted QUEUED in the caller's transaction:
   * call enqueue(messageId) once that transaction has committed.
   */
  async queueReply(tx: EntityManager, origin: SendOrigin, orgId: string, thread: CallerThread, body: string, sendAt: Date | null = null): Promise<string> {
    const partner = await this.messages.partner(tx, thread);
    const common = { orgId, threadId: thread.id, lineId: thread.line_id, body, to: partner, origin, sendAt };
    if (thread.channel === 'SMS') {
      return this.insertQueued(tx, { ...common, channel: 'SMS', from: { value: thread.line_address, kind: 'PHONE' } });
    }
    const parent = await this.messages.latestHeaders(tx, thread);
    return this.insertQueued(tx, {
      ...common,
      channel: 'EMAIL',
      subject: replySubject(thread.subject),
      from: { value: thread.line_address, kind: 'EMAIL' },
      headerMessageId: newMessageId(thread.line_address),
      inReplyTo: parent?.header_message_id ?? null,
      references: parent
        ? replyReferences({ messageId: parent.header_message_id, references: parent.header_references, inReplyTo: parent.header_in_reply_to })
        : [],
    });
  }

  /**
   * Inserts the message QUEUED and moves its thread's last-message time, in the caller's
   * transaction, once the send gate admits it (every send passes here, so every send meets its
   * rules; `gateRead`: the gate's read, made by an earlier statement of `tx`: SendGate.readColumns).
   * A draft-only credential's message (origin.draftOnly) is admitted, then held as a draft turn
   * awaiting a person instead (draft-holds.ts); the turn's id is answered.
   */
  async insertQueued(tx: EntityManager, m: QueuedMessage, gateRead?: GateRead): Promise<string> {
    await this.gate.admit(tx, m, gateRead);
    if (m.origin.draftOnly) return this.holdDraft(tx, m);
    // The id is taken here so the call's audit row, carried by the same statement, names it.
    const id = randomUUID();
    noteAuditTargets({ messageId: id, threadId: m.threadId });
    await this.messages.insertQueued(tx, id, m, claimAuditRow(tx));
    return id;
  }

  /**
   * A person approved a draft-only credential's draft: the message as it was proposed (`proposal`,
   * stored whole), sent for `origin` (the approver's: the gate is asked again). Call enqueue once
   * the transaction has committed.
   */
  async sendProposal(tx: EntityManager, proposal: QueuedMessage, origin: SendOrigin): Promise<{ id: string; sendAt: Date | null }> {
    // A draft proposed with sendAt (stored as JSON: an ISO string) goes out then if that is still ahead, else now.
    const proposed = proposal.sendAt ? new Date(proposal.sendAt) : null;
    const sendAt = proposed !== null && proposed.getTime() > Date.now() ? proposed : null;
    const id = await this.insertQueued(tx, { ...proposal, origin, sendAt });
    if (sendAt) await this.publishStatusChanged(tx, id, null, 'SCHEDULED');
    return { id, sendAt };
  }

  /** After the commit that wrote it: a message goes to its hand-off, or, SCHEDULED, to its release when due. */
  async dispatch(messageId: string, sendAt: Date | null): Promise<void> {
    await (sendAt ? this.enqueueDue(messageId, sendAt) : this.enqueue(messageId));
  }

  /**
   * A draft-only credential's message, admitted by the gate: held as a draft turn (its id is
   * answered; nothing is queued). Only on a conversation that has a message: a new one (send_sms or
   * send_email with `to` and no thread yet) is refused, as every thread event describes a thread
   * with at least one message (the thread made for it is rolled back with the call).
   */
  private async holdDraft(tx: EntityManager, m: QueuedMessage): Promise<string> {
    if (!(await this.messages.threadHasMessages(tx, m.threadId))) {
      throw new ValidationError(
        `to: this credential is draft-only, and a draft goes on a conversation that exists: there is none with ${m.to.value} on this line yet (a person, or a credential with send, starts it)`,
        'to',
      );
    }
    return this.drafts.get().hold(tx, m);
  }

  /** Hands the message over in a job; if Redis refuses now, the job is retried by the next sweep of QUEUED messages. */
  async enqueue(messageId: string): Promise<void> {
    await this.queue
      .add(
        { messageId },
        {
          jobId: `handoff:${messageId}`,
          attempts: HANDOFF_ATTEMPTS,
          backoff: { type: 'exponential', delay: 2000 },
          removeOnComplete: true,
          removeOnFail: true,
        },
      )
      .catch((error: unknown) => this.logger.warn(`could not enqueue hand-off of ${messageId}: ${(error as Error).message}`));
  }

  /**
   * A scheduled message's job: run at its time (delay), it releases the message (ScheduledSends.release).
   * Bull keeps delayed jobs in Redis across restarts; the due sweep covers a job that is lost.
   */
  async enqueueDue(messageId: string, sendAt: Date): Promise<void> {
    await this.queue
      .add(
        { messageId, due: true },
        {
          jobId: scheduledJobId(messageId),
          delay: Math.max(0, sendAt.getTime() - Date.now()),
          attempts: HANDOFF_ATTEMPTS,
          backoff: { type: 'exponential', delay: 2000 },
          removeOnComplete: true,
          removeOnFail: true,
        },
      )
      .catch((error: unknown) => this.logger.warn(`could not enqueue the scheduled send of ${messageId}: ${(error as Error).message}`));
  }

  /** Drops a cancelled message's delayed job (best effort: a job left behind finds the message CANCELED and does nothing). */
  async dropDue(messageId: string): Promise<void> {
    try {
      const job = await this.queue.getJob(scheduledJobId(messageId));
      await job?.remove();
    } catch (error) {
      this.logger.warn(`could not drop the scheduled job of ${messageId}: ${(error as Error).message}`);
    }
  }

  /** The job: hand a QUEUED message to its channel (the carrier, the mail server), which records where it went. */
  async handOff(messageId: string, attemptsMade: number): Promise<void> {
    const message = await this.messages.forHandOff(messageId);
    if (!message || message.status !== 'QUEUED') return;
    // The opt-out check again (opted_out) rides on the read above; only an SMS whose number opted out since it was queued opens a transaction.
    if (message.opted_out_since_queued && (await this.refusedAtHandOff(message))) return;
    await this.channels.for(message.channel).handOff(messageId, attemptsMade);
  }

  /** A QUEUED message whose number opted out since it was queued (SendGate.refusalAtHandOff) goes FAILED with the refusal, never to the carrier. */
  private async refusedAtHandOff(message: HandOffRow): Promise<boolean> {
    return this.dataSource.transaction(async (tx) => {
      const refusal = await this.gate.refusalAtHandOff(tx, {
        channel: message.channel,
        lineId: message.line_id,
        to: message.to_value,
        createdAt: message.created_at,
      });
      if (!refusal) return false;
      await this.transitionIn(tx, message.id, 'QUEUED', 'FAILED', { error: refusal.message });
      return true;
    });
  }

  /**
   * Moves a message from one status to the next (only if it is still in `from`), and publishes
   * message.status_changed, plus message.sent when it leaves QUEUED for SENT or DELIVERED.
   */
  async transition(
    messageId: string,
    from: MessageStatus,
    to: MessageStatus,
    extra: { providerMessageId?: string; error?: string | null; headerMessageId?: string } = {},
  ): Promise<boolean> {
    return this.dataSource.transaction((tx) => this.transitionIn(tx, messageId, from, to, extra));
  }

  /** transition() in the caller's transaction. */
  async transitionIn(
    tx: EntityManager,
    messageId: string,
    from: MessageStatus,
    to: MessageStatus,
    extra: { providerMessageId?: string; error?: string | null; headerMessageId?: string } = {},
  ): Promise<boolean> {
    const row = await this.messages.transition(tx, messageId, from, to, extra);
    if (!row) return false;
    const data = await this.data.build(messageId, tx);
    const changed: DomainEvent = {
      type: 'message.status_changed',
      orgId: row.org_id,
      lineId: row.line_id,
      data: { ...data, previousStatus: from, currentStatus: to, error: to === 'FAILED' ? (extra.error ?? null) : null },
    };
    const sent: DomainEvent = { type: 'message.sent', orgId: row.org_id, lineId: row.line_id, data };
    // One outbox insert for both events (message.sent first, as before).
    await this.bus.publishAll(from === 'QUEUED' && (to === 'SENT' || to === 'DELIVERED') ? [sent, changed] : [changed], tx);
    return true;
  }

  /** message.status_changed of a message just written in `status` (previousStatus null): a scheduled send's SCHEDULED. */
  private async publishStatusChanged(tx: EntityManager, messageId: string, from: null, to: MessageStatus): Promise<void> {
    const place = await this.messages.placeOf(tx, messageId);
    const data = await this.data.build(messageId, tx);
    await this.bus.publish(
      { type: 'message.status_changed', orgId: place.org_id, lineId: place.line_id, data: { ...data, previousStatus: from, currentStatus: to, error: null } },
      tx,
    );
  }

  /** The queued message as the tool answers it; not found if its thread was deleted in the meantime. */
  async view(messageId: string): Promise<SerializedMessage> {
    const message = await this.messages.view(messageId);
    if (!message) throw NotFoundError.of('message', messageId, 'messageId');
    return message;
  }
}

/** The delayed job of a scheduled message (one per message: Bull adds no second job with the same id). */
export function scheduledJobId(messageId: string): string {
  return `scheduled:${messageId}`;
}

/** A digest of the tool and its arguments but the key (the arguments are flat: strings and booleans; sendAt among them). */
function requestDigest({ tool, args }: SendCall): string {
  const { idempotencyKey: _key, ...rest } = args;
  const sorted = Object.fromEntries(Object.entries(rest).sort(([a], [b]) => (a < b ? -1 : 1)));
  return createHash('sha256')
    .update(JSON.stringify([tool, sorted]))
    .digest('base64url');
}

/** The message a key's first call queued, if this call repeats that call. */
function replayedMessage(key: string, call: SendCall, first: ClaimedKeyRow): string {
  if (first.tool !== call.tool || first.request_digest !== requestDigest(call)) {
    const where = first.tool === call.tool ? 'with other arguments' : `by ${first.tool}`;
    throw new ConflictError(
      `idempotencyKey "${key}" was used in the last 24 hours ${where}; a key stands for one message: use a new key for a new message`,
      'idempotencyKey',
    );
  }
  if (first.message_id === null) throw new NotFoundError(`the message sent with idempotencyKey "${key}" has been deleted (with its thread)`, 'idempotencyKey');
  return first.message_id;
}
