import { buildEventData } from '../delivery/payloads';
import { EVENT_KINDS, EventKind } from '../events/event-kinds';
import { EventMessage, IdentityData } from '../conversations/conversation-vocabulary';
import { AgentTurnData, EventDataByKind, MessageEventData } from '../events/event-payloads';
import { PayloadMode } from '../webhooks/webhook.types';

/**
 * One example delivery per kind and mode, for the catalog page (docs/events.md). The full data of
 * each kind is written once, as the messaging domain publishes it, and cut to each mode by the
 * delivery payload builder itself, so an example shows what an endpoint receives; a unit test
 * validates every example against its schema. Ids, times and the signed URL are made up.
 */

const ENDPOINTS: Record<PayloadMode, string> = {
  concise: '0b7e2f4a-6c1d-4e8b-9a35-2f6d8c41e7a0',
  verbose: '5c9a1d37-8e42-4b6f-a1c0-7d3e9b2f5a64',
};
const HISTORY_COUNT = 2;
const THREAD = 'c41a7e90-2b3d-4f6e-8a15-9d0c7b3e6f21';
const MARIA_EMAIL = 'maria.chen@example.com';
const SHOP_EMAIL = 'support@northwind-plumbing.com';

const identities: IdentityData[] = [
  { id: '6b1f8e4d-2c7a-4f93-b0d5-8e1a3c6f9b27', kind: 'EMAIL', value: MARIA_EMAIL, displayName: 'Maria Chen' },
  { id: '2d4c6e8a-0b1f-4a3c-9e5d-7f9b1d3c5e70', kind: 'PHONE', value: '+14155550142', displayName: null },
];

function email(id: string, direction: 'INBOUND' | 'OUTBOUND', status: string, body: string, at: string): EventMessage {
  const maria = { value: MARIA_EMAIL, kind: 'EMAIL' as const };
  const shop = { value: SHOP_EMAIL, kind: 'EMAIL' as const };
  return {
    id,
    threadId: THREAD,
    channel: 'EMAIL',
    direction,
    status,
    body,
    createdAt: at,
    sentAt: direction === 'OUTBOUND' && status !== 'QUEUED' ? at : null,
    fromIdentity: direction === 'INBOUND' ? maria : shop,
    toIdentity: direction === 'INBOUND' ? shop : maria,
    bodyTruncated: false,
  };
}

const first = email(
  'a9f3e1c7-5d2b-4e8a-9c64-1b7d0e3f5a82',
  'INBOUND',
  'RECEIVED',
  'Could you quote a bathroom remodel? Floor plan attached.',
  '2025-11-20T14:02:55.342Z',
);
const reply = email(
  'd3b8f2a6-1e4c-4d7b-8a90-5c2e7f1b3d64',
  'OUTBOUND',
  'SENT',
  'Thanks Maria, the quote is attached. Does Tuesday suit you?',
  '2025-11-20T15:30:12.008Z',
);

function messageData(message: EventMessage, history: EventMessage[]): MessageEventData {
  return {
    thread: { id: THREAD, subject: 'Quote for bathroom remodel', lastMessageAt: message.createdAt, messageCount: history.length, recentMessages: history },
    person: { id: '7a2c4e6f-8b0d-4f1a-9c3e-5d7f9b1a3c5e', displayName: 'Maria Chen', identities },
    labels: ['Quotes'],
    message,
    attachments:
      message.direction === 'INBOUND'
        ? [{ id: '41d7c9e3-6a2f-4b85-9e10-3c7a5d8f2b64', filename: 'floor-plan.pdf', mimeType: 'application/pdf', sizeBytes: 284113 }]
        : [],
    emailHeaders: {
      messageId: message.direction === 'INBOUND' ? '<CAK7p2Xq9f1@mail.example.com>' : '<20251120153012.d3b8f2a6@northwind-plumbing.com>',
      inReplyTo: message.direction === 'INBOUND' ? null : '<CAK7p2Xq9f1@mail.example.com>',
      references: message.direction === 'INBOUND' ? [] : ['<CAK7p2Xq9f1@mail.example.com>'],
      listUnsubscribe: null,
      authentication: message.direction === 'INBOUND' ? { spf: 'pass', dkim: 'pass', dmarc: 'pass' } : { spf: null, dkim: null, dmarc: null },
    },
    labelConfidence: { Quotes: 0.93 },
  };
}

const received = messageData(first, [first]);
const sent = messageData(reply, [first, reply]);

/** A DRAFT agent's turn awaiting approval, an AUTO agent's sent turn, or a draft-only API key's draft a person rejected (with a reason). */
function agentTurn(status: 'AWAITING_APPROVAL' | 'SENT' | 'REJECTED'): AgentTurnData {
  const { thread, person, labels } = received;
  const key = { id: '4b6d8f0a-2c4e-4a6b-9d8f-0a2c4e6b8d0f', name: 'support agent' };
  const ids = {
    SENT: 'e5a7c9b1-3d5f-4e7a-9b1c-3e5a7c9b1d3f',
    AWAITING_APPROVAL: 'f1b3d5e7-9a1c-4e3b-8d5f-7a9c1e3b5d7f',
    REJECTED: 'a3c5e7f9-1b3d-4f5a-8c7e-9f1b3d5a7c9e',
  };
  const rejected = status === 'REJECTED' && {
    agent: { ...key, mode: 'DRAFT' as const },
    credential: { ...key, kind: 'API_KEY' as const },
    rejectionReason: 'We do not promise delivery dates by text.',
  };
  return {
    thread,
    person,
    labels,
    agentTurn: {
      id: ids[status],
      status,
      threadId: THREAD,
      messageId: status === 'SENT' ? reply.id : null,
      createdAt: '2025-11-20T14:03:01.517Z',
      agent: { id: '9e1a3c5b-7d9f-4b1d-a3c5-e7f9b1d3a5c7', name: 'Front desk', mode: status === 'SENT' ? 'AUTO' : 'DRAFT' },
      ...rejected,
    },
  };
}

const FULL_DATA: { [K in EventKind]: EventDataByKind[K] } = {
  'message.received': received,
  'message.sent': sent,
  'message.status_changed': {
    ...messageData({ ...reply, status: 'DELIVERED' }, [first, { ...reply, status: 'DELIVERED' }]),
    previousStatus: 'SENT',
    currentStatus: 'DELIVERED',
    error: null,
  },
  'thread.created': { ...received, labels: [], labelConfidence: {} },
  'email.opened': { ...sent, open: { firstOpenedAt: '2025-11-20T16:05:40.221Z', lastOpenedAt: '2025-11-20T16:05:40.221Z', openCount: 1 } },
  'attachment.extracted': {
    ...received,
    attachment: {
      id: '41d7c9e3-6a2f-4b85-9e10-3c7a5d8f2b64',
      filename: 'floor-plan.pdf',
      mimeType: 'application/pdf',
      sizeBytes: 284113,
      messageId: first.id,
      textLength: 1873,
      hasText: true,
      extractedAt: '2025-11-20T14:03:09.771Z',
    },
    calendarEvents: [],
  },
  'contact.merged': {
    contact: { id: '7a2c4e6f-8b0d-4f1a-9c3e-5d7f9b1a3c5e', displayName: 'Maria Chen', identities },
    mergedContactIds: ['3f5b7d9a-1c3e-4a5b-8d7f-9b1d3f5a7c9e'],
  },
  'email_account.health_changed': {
    emailAccount: { id: '8c0e2a4b-6d8f-4a0b-9c2d-4e6f8a0b2c4d', emailAddress: SHOP_EMAIL, isActive: true, lastSyncedAt: '2025-11-20T13:58:00.000Z' },
    health: { status: 'unhealthy', errorKind: 'AUTH', error: 'Invalid credentials (Failure)', since: '2025-11-20T14:00:04.913Z' },
  },
  'agent_turn.awaiting_approval': agentTurn('AWAITING_APPROVAL'),
  'agent_turn.sent': agentTurn('SENT'),
  'sms.opted_out': optOut(true),
  'sms.opted_in': optOut(false),
  'agent_turn.rejected': agentTurn('REJECTED'),
};

/** A number's opt-out of the shop's line: STOP, or START after it. */
function optOut(optedOut: boolean): EventDataByKind['sms.opted_out'] {
  return {
    optOut: {
      lineId: '2b4d6f8a-0c2e-4a6b-8d0f-1a3c5e7b9d2f',
      lineNumber: '+15551230001',
      number: '+15557654321',
      optedOut,
      keyword: optedOut ? 'STOP' : 'START',
      changedAt: optedOut ? '2025-11-20T14:10:02.118Z' : '2025-11-21T09:30:45.907Z',
      threadId: '5e7a9c1b-3d5f-4b7d-9f1a-2c4e6a8b0d3f',
      messageId: optedOut ? '6f8b0d2c-4e6a-4c8e-8a2b-3d5f7b9c1e4a' : '7a9c1e3d-5f7b-4d9f-9b3c-4e6a8c0d2f5b',
    },
  };
}

/** The example webhook body of `kind` in `mode`, as an endpoint with messageHistoryCount 2 receives it. */
export function exampleEnvelope(kind: EventKind, mode: PayloadMode, baseUrl: string): Record<string, unknown> {
  const data = buildEventData(kind, FULL_DATA[kind], mode, HISTORY_COUNT) as { attachments?: Array<{ id: string }> };
  const withUrls = Array.isArray(data.attachments)
    ? {
        ...data,
        attachments: data.attachments.map((a) => ({
          ...a,
          url: `${baseUrl}/attachments/${a.id}/download?for=fA4qlFsdTz6KYtlLDzHH6A&expires=1763650975&sig=18447c9e99485604510d9b08d1d17d58a265e6defdb5229f1f29c2c5799ac4f1`,
        })),
      }
    : data;
  const index = EVENT_KINDS.indexOf(kind) * 2 + (mode === 'verbose' ? 1 : 0);
  return {
    id: `evt_${(0x1f0c9a7e + index).toString(16).padStart(8, '0')}3b5d4e2f8a6c0b9d7e5f3a1c`,
    type: kind,
    createdAt: '2025-11-20T14:02:55.342Z',
    endpointId: ENDPOINTS[mode],
    mode,
    data: withUrls,
  };
}
