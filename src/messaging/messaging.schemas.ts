/** JSON Schemas of messaging tool results, shared by the tools. */
const identityRef = {
  type: 'object',
  properties: { value: { type: 'string' }, kind: { type: 'string', enum: ['PHONE', 'EMAIL'] } },
  required: ['value', 'kind'],
} as const;

export const messageSchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    threadId: { type: 'string' },
    channel: { type: 'string', enum: ['SMS', 'EMAIL'] },
    direction: { type: 'string', enum: ['INBOUND', 'OUTBOUND'] },
    status: { type: 'string' },
    body: { type: 'string' },
    createdAt: { type: 'string' },
    sentAt: { type: ['string', 'null'] },
    fromIdentity: identityRef,
    toIdentity: identityRef,
  },
  required: ['id', 'threadId', 'channel', 'direction', 'status', 'body', 'createdAt', 'sentAt', 'fromIdentity', 'toIdentity'],
} as const;

export const identitySchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    kind: { type: 'string', enum: ['PHONE', 'EMAIL'] },
    value: { type: 'string' },
    displayName: { type: ['string', 'null'] },
  },
  required: ['id', 'kind', 'value', 'displayName'],
} as const;
