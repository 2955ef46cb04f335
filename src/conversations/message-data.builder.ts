import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { SqlEventData } from '../events/domain-event';
import { IdentityData, PersonData, SerializedMessage, ThreadData } from './conversation-vocabulary';
import { MessageEventData } from '../events/event-payloads';
import { EventDataLimits, IdentityRow, MessageDataRepository, MessageRow } from './message-data.repository';

/** recentMessages carries at most this many (an endpoint trims further to its messageHistoryCount). */
export const MAX_RECENT_MESSAGES = 50;

/**
 * What one event's data may hold, so that the largest payload has a known bound (docs/webhooks.md,
 * "Payload size"). Characters are Unicode code points. A cut body says so (`bodyTruncated`); the
 * whole message stays available with get_message, the whole file's text with read_attachment.
 */
export const EVENT_LIMITS = {
  /** `message.body` of the event's own message. */
  messageBodyChars: 16_384,
  /** `body` of each `thread.recentMessages` entry. */
  recentMessageBodyChars: 1_024,
  /** `thread.subject` and each email header value (RFC 5322's longest line). */
  headerChars: 998,
  /** `emailHeaders.references`: the first (the thread's root) and the latest ones, as in our own replies. */
  references: 30,
  /** `attachments` of the message, in their order. */
  attachments: 100,
  /** An attachment's `filename` and `mimeType`. */
  attachmentNameChars: 255,
} as const;

/** The limits as the repository's statements take them. */
const LIMITS: EventDataLimits = { recentMessages: MAX_RECENT_MESSAGES, ...EVENT_LIMITS };

export function serializeMessage(m: MessageRow): SerializedMessage {
  return {
    id: m.id,
    threadId: m.thread_id,
    channel: m.channel,
    direction: m.direction,
    status: m.status,
    body: m.body,
    createdAt: m.created_at.toISOString(),
    sentAt: m.sent_at?.toISOString() ?? null,
    ...(m.send_at ? { sendAt: m.send_at.toISOString() } : {}),
    fromIdentity: { value: m.from_value, kind: m.from_kind },
    toIdentity: { value: m.to_value, kind: m.to_kind },
  };
}

/**
 * Builds the full (verbose) data of a message-centred event from the database, inside the
 * transaction that publishes it, so the event shows the state that change committed.
 */
@Injectable()
export class MessageDataBuilder {
  constructor(private readonly repository: MessageDataRepository) {}

  /** Everything in one statement: an inbound message's transaction waits on this round trip. */
  async build(messageId: string, manager: EntityManager): Promise<MessageEventData> {
    return (await this.buildMany([messageId], manager))[0];
  }

  /** build() of each message, in the order given, in one statement (for messages of distinct threads recorded together). */
  async buildMany(messageIds: string[], manager: EntityManager): Promise<MessageEventData[]> {
    const rows = await this.repository.messageEventData(manager, messageIds, LIMITS);
    const byId = new Map(rows.map((row) => [row.key, row.data]));
    return messageIds.map((id) => {
      const data = byId.get(id);
      if (!data) throw new Error(`message ${id} does not exist`);
      return data;
    });
  }

  /**
   * The statement that builds build()'s data for these messages, keyed by message id: for
   * EventBus.publishAllFrom, which stores the data without reading them into Node.
   */
  source(messageIds: string[]): SqlEventData {
    return this.repository.eventDataSource(messageIds, LIMITS);
  }

  /** Thread, person and labels only: for agent turns, which carry no message. */
  async buildThreadEnvelope(threadId: string, manager: EntityManager): Promise<{ thread: ThreadData; person: PersonData | null; labels: string[] }> {
    const envelope = await this.repository.threadEnvelope(manager, threadId, LIMITS);
    if (!envelope) throw new Error(`thread ${threadId} does not exist`);
    return envelope;
  }

  /** The thread's partner: their contact with every identity, or an orphan identity (id null). */
  person(threadId: string, manager: EntityManager): Promise<PersonData | null> {
    return this.repository.person(manager, threadId);
  }
}

export function toIdentity(row: IdentityRow): IdentityData {
  return { id: row.id, kind: row.kind, value: row.value, displayName: row.display_name };
}
