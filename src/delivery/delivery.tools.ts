import { Principal } from '../identity/principal';
import { McpTool, McpToolHandler, ToolArgs } from '../tools/tool.decorator';
import { DeliveriesService, RECOVER_MAX_DELIVERIES } from './deliveries.service';
import { getWebhookDeliveryInput, listWebhookDeliveriesInput, recoverWebhookDeliveriesInput, resendWebhookDeliveryInput } from './delivery.schemas';
import { DELIVERY_STATUSES } from './webhook-delivery.entity';
import { RESULT_BOUNDS } from '../common/result-bounds';
import { nextCursorResult, nullable, nullableString } from '../tools/tool-schemas';

const deliverySchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    eventId: { type: 'string', pattern: '^evt_[0-9a-f]{32}$' },
    endpointId: { type: 'string' },
    eventType: { type: 'string' },
    status: { type: 'string', enum: [...DELIVERY_STATUSES] },
    attempts: { type: 'integer' },
    lastStatusCode: nullable({ type: 'integer' } as const),
    lastError: nullableString,
    lastAttemptAt: nullableString,
    lastDurationMs: nullable({ type: 'integer' } as const, 'How long the last attempt took, in ms; null before the first.'),
    nextAttemptAt: nullableString,
    resentFromId: nullableString,
    createdAt: { type: 'string', format: 'date-time' },
  },
  required: ['id', 'eventId', 'endpointId', 'eventType', 'status', 'attempts', 'createdAt'],
} as const;

@McpTool({
  name: 'list_webhook_deliveries',
  title: 'List webhook deliveries',
  description: 'Delivery log of one endpoint: 25 rows per page, newest first, optionally only one status. Pass nextCursor as cursor for the next page.',
  kind: 'read',
  idempotent: true,
  minRole: 'MEMBER',
  permission: 'webhooks',
  inputSchema: listWebhookDeliveriesInput,
  outputSchema: {
    type: 'object',
    properties: { deliveries: { type: 'array', items: deliverySchema }, nextCursor: nextCursorResult },
    required: ['deliveries', 'nextCursor'],
  },
})
export class ListWebhookDeliveriesTool implements McpToolHandler<ToolArgs<typeof listWebhookDeliveriesInput>> {
  constructor(private readonly deliveries: DeliveriesService) {}

  execute(args: ToolArgs<typeof listWebhookDeliveriesInput>, caller: Principal) {
    return this.deliveries.list(caller, args.endpointId, args.cursor, args.status);
  }
}

@McpTool({
  name: 'resend_webhook_delivery',
  title: 'Resend a webhook delivery',
  description: 'Sends the data of a past delivery again as a new delivery with a fresh evt_ id.',
  kind: 'write',
  openWorld: true,
  minRole: 'MEMBER',
  permission: 'webhooks',
  inputSchema: resendWebhookDeliveryInput,
  outputSchema: { type: 'object', properties: { delivery: deliverySchema }, required: ['delivery'] },
})
export class ResendWebhookDeliveryTool implements McpToolHandler<ToolArgs<typeof resendWebhookDeliveryInput>> {
  constructor(private readonly deliveries: DeliveriesService) {}

  async execute(args: ToolArgs<typeof resendWebhookDeliveryInput>, caller: Principal) {
    return { delivery: await this.deliveries.resend(caller, args.deliveryId) };
  }
}

const attemptSchema = {
  type: 'object',
  properties: {
    attemptNumber: { type: 'integer' },
    attemptedAt: { type: 'string', format: 'date-time' },
    durationMs: { type: 'integer' },
    statusCode: nullable({ type: 'integer' } as const),
    errorKind: nullableString,
    responseBody: nullable({ type: 'string' } as const, 'The first 2 KB (2048 bytes) of the response body.'),
  },
  required: ['attemptNumber', 'attemptedAt', 'durationMs', 'statusCode', 'errorKind', 'responseBody'],
} as const;

const envelopeSchema = {
  type: 'object',
  description: 'The envelope as signed and sent, without the attachment links, which are signed afresh for each attempt.',
  properties: {
    id: { type: 'string', pattern: '^evt_[0-9a-f]{32}$' },
    type: { type: 'string' },
    createdAt: { type: 'string', format: 'date-time' },
    endpointId: { type: 'string' },
    mode: { type: 'string', enum: ['concise', 'verbose'] },
    data: { type: 'object' },
  },
  required: ['id', 'type', 'createdAt', 'endpointId', 'mode', 'data'],
} as const;

@McpTool({
  name: 'get_webhook_delivery',
  title: 'Get a webhook delivery',
  description:
    'One delivery of the log with its envelope (the event data as sent) and every attempt: time, status code or error kind, duration, response body. ' +
    `An envelope whose JSON text is longer than ${RESULT_BOUNDS.envelopeChars} characters (a verbose event with a long history), or any envelope ` +
    `when offset or maxChars is given, comes as envelopeText instead: ${RESULT_BOUNDS.envelopeTextChars} characters of that text by default; ` +
    'pass nextOffset as offset for the next window, and parse the joined windows as JSON.',
  kind: 'read',
  idempotent: true,
  minRole: 'MEMBER',
  permission: 'webhooks',
  inputSchema: getWebhookDeliveryInput,
  outputSchema: {
    type: 'object',
    properties: {
      delivery: { ...deliverySchema, properties: { ...deliverySchema.properties, recoveredAt: nullableString } },
      envelope: nullable(envelopeSchema, 'The envelope, whole; null when it comes as envelopeText.'),
      envelopeLength: { type: 'integer', description: "The length of the envelope's JSON text, in characters." },
      envelopeText: nullable({ type: 'string' } as const, "A window of the envelope's JSON text when envelope is null; null otherwise."),
      nextOffset: nullable({ type: 'integer' } as const, 'The offset of the next window of envelopeText; null at its end, or when envelope is whole.'),
      attempts: { type: 'array', items: attemptSchema },
    },
    required: ['delivery', 'envelope', 'envelopeLength', 'envelopeText', 'nextOffset', 'attempts'],
  },
})
export class GetWebhookDeliveryTool implements McpToolHandler<ToolArgs<typeof getWebhookDeliveryInput>> {
  constructor(private readonly deliveries: DeliveriesService) {}

  execute(args: ToolArgs<typeof getWebhookDeliveryInput>, caller: Principal) {
    return this.deliveries.detail(caller, args.deliveryId, args);
  }
}

@McpTool({
  name: 'recover_webhook_deliveries',
  title: 'Recover failed webhook deliveries',
  description:
    `Resends every failed delivery of an active endpoint whose event was created in [since, until), each once, as resend_webhook_delivery does (a new delivery with a fresh evt_ id). ` +
    `A delivery already recovered or resent is skipped, so calling again over an overlapping window resends nothing twice. ` +
    `At most ${RECOVER_MAX_DELIVERIES} a call, oldest first; truncated: true means more are left: call again with since = nextSince.`,
  kind: 'write',
  openWorld: true,
  idempotent: true,
  minRole: 'MEMBER',
  permission: 'webhooks',
  inputSchema: recoverWebhookDeliveriesInput,
  outputSchema: {
    type: 'object',
    properties: {
      endpointId: { type: 'string' },
      since: { type: 'string', format: 'date-time' },
      until: { type: 'string', format: 'date-time' },
      queued: { type: 'integer', description: 'Failed deliveries resent by this call.' },
      truncated: { type: 'boolean', description: `True when more than ${RECOVER_MAX_DELIVERIES} were due: the rest are left for another call.` },
      nextSince: nullable({ type: 'string', format: 'date-time' } as const, 'When truncated, the since of the next call (same until); otherwise null.'),
    },
    required: ['endpointId', 'since', 'until', 'queued', 'truncated', 'nextSince'],
  },
})
export class RecoverWebhookDeliveriesTool implements McpToolHandler<ToolArgs<typeof recoverWebhookDeliveriesInput>> {
  constructor(private readonly deliveries: DeliveriesService) {}

  execute(args: ToolArgs<typeof recoverWebhookDeliveriesInput>, caller: Principal) {
    return this.deliveries.recover(caller, args.endpointId, args.since, args.until);
  }
}
