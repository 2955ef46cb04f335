import { createHash } from 'node:crypto';
import { PublishedEvent } from '../events/domain-event';
import { EventKind } from '../events/event-kinds';
import { AgentTurnData, MessageEventData, PersonData, ThreadData } from '../events/event-payloads';
import { PayloadMode } from '../webhooks/webhook.types';

/** Kinds whose data is built around one message (spec: "as message.received ..."). */
const MESSAGE_KINDS = new Set<EventKind>([
  'message.received',
  'message.sent',
  'message.status_changed',
  'thread.created',
  'email.opened',
  'attachment.extracted',
]);
const AGENT_KINDS = new Set<EventKind>(['agent_turn.awaiting_approval', 'agent_turn.sent', 'agent_turn.rejected']);

/**
 * The envelope's `data` for one endpoint, from the event's full data: concise keeps the base
 * objects; verbose adds the spec's extras, with thread.recentMessages trimmed to the endpoint's
 * messageHistoryCount (the most recent ones, oldest first).
 */
export function buildEventData(type: EventKind, data: object, mode: PayloadMode, messageHistoryCount: number): object {
  if (MESSAGE_KINDS.has(type)) return messageData(data as MessageEventData, mode, messageHistoryCount);
  if (AGENT_KINDS.has(type)) return agentTurnData(data as AgentTurnData, mode, messageHistoryCount);
  return data; // contact.merged, email_account.health_changed, sms.opted_out, sms.opted_in: the same in both modes
}

function messageData(data: MessageEventData, mode: PayloadMode, historyCount: number): object {
  const { thread, person, labels, message, attachments, emailHeaders, labelConfidence, ...specific } = data;
  const base = { ...specific, thread: threadData(thread, mode, historyCount), person: personData(person, mode), labels, message };
  if (mode === 'concise') return base;
  return {
    ...base,
    attachments,
    ...(message.channel === 'EMAIL' ? { emailHeaders } : {}),
    labelConfidence,
  };
}

function agentTurnData(data: AgentTurnData, mode: PayloadMode, historyCount: number): object {
  return {
    thread: threadData(data.thread, mode, historyCount),
    person: personData(data.person, mode),
    labels: data.labels,
    agentTurn: data.agentTurn,
  };
}

function threadData(thread: ThreadData, mode: PayloadMode, historyCount: number): object {
  const { recentMessages, ...base } = thread;
  if (mode === 'concise') return base;
  return { ...base, recentMessages: historyCount === 0 ? [] : recentMessages.slice(-historyCount) };
}

function personData(person: PersonData | null, mode: PayloadMode): object | null {
  if (!person) return null;
  const { identities, ...base } = person;
  return mode === 'concise' ? base : { ...base, identities };
}

/** The envelope `data` of one delivery as stored: its JSON text and that text's SHA-256 (hex), the key it is stored under. */
export interface StoredPayload {
  digest: string;
  json: string;
}

/**
 * The payloads of one fan-out batch, each built, serialized and hashed once per variant of an
 * event: every concise endpoint shares one, and verbose ones share one per history length.
 */
export class PayloadVariants {
  private readonly byVariant = new Map<string, StoredPayload>();
  private readonly byDigest = new Map<string, StoredPayload>();

  /** The digest of the payload `event` has for an endpoint with this mode and history length. */
  of(event: PublishedEvent, mode: PayloadMode, messageHistoryCount: number): string {
    const variant = `${event.id}:${mode}:${mode === 'verbose' ? messageHistoryCount : ''}`;
    let payload = this.byVariant.get(variant);
    if (!payload) {
      const json = JSON.stringify(buildEventData(event.type, event.data, mode, messageHistoryCount));
      const digest = createHash('sha256').update(json, 'utf8').digest('hex');
      payload = this.byDigest.get(digest) ?? { digest, json };
      this.byVariant.set(variant, payload);
      this.byDigest.set(payload.digest, payload);
    }
    return payload.digest;
  }

  /** Each distinct payload once (two variants, or two events, may have the same content). */
  distinct(): StoredPayload[] {
    return [...this.byDigest.values()];
  }
}
