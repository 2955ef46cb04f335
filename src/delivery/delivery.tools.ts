import { Caller } from '../auth/caller';
import { McpTool, McpToolHandler } from '../mcp/mcp-tool.decorator';
import { endpointIdSchema } from '../webhooks/webhook.schemas';
import { DeliveriesService } from './deliveries.service';
import { DELIVERY_STATUSES } from './webhook-delivery.entity';
import { cursorArgument, nextCursorResult } from '../mcp/common-schemas';

const nullableString = { type: ['string', 'null'] } as const;

const deliverySchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    eventId: { type: 'string', pattern: '^evt_[0-9a-f]{32}$' },
    endpointId: { type: 'string' },
    eventType: { type: 'string' },
    status: { type: 'string', enum: [...DELIVERY_STATUSES] },
    attempts: { type: 'integer' },
    lastStatusCode: { type: ['integer', 'null'] },
    lastError: nullableString,
    lastAttemptAt: nullableString,
    nextAttemptAt: nullableString,
    resentFromId: nullableString,
    createdAt: { type: 'string', format: 'date-time' },
  },
  required: ['id', 'eventId', 'endpointId', 'eventType', 'status', 'attempts', 'createdAt'],
} as const;

@McpTool({
  name: 'list_webhook_deliveries',
  title: 'List webhook deliveries',
  description: 'Delivery log of one endpoint: 25 rows per page, newest first. Pass nextCursor as cursor for the next page.',
  kind: 'read',
  idempotent: true,
  minRole: 'MEMBER',
  inputSchema: {
    type: 'object',
    properties: {
      endpointId: endpointIdSchema,
      cursor: cursorArgument,
    },
    required: ['endpointId'],
    additionalProperties: false,
  },
  outputSchema: {
    type: 'object',
    properties: { deliveries: { type: 'array', items: deliverySchema }, nextCursor: nextCursorResult },
    required: ['deliveries', 'nextCursor'],
  },
})
export class ListWebhookDeliveriesTool implements McpToolHandler<{ endpointId: string; cursor?: string }> {
  constructor(private readonly deliveries: DeliveriesService) {}

  execute(args: { endpointId: string; cursor?: string }, caller: Caller) {
    return this.deliveries.list(caller, args.endpointId, args.cursor);
  }
}

@McpTool({
  name: 'resend_webhook_delivery',
  title: 'Resend a webhook delivery',
  description: 'Sends the data of a past delivery again as a new delivery with a fresh evt_ id.',
  kind: 'write',
  minRole: 'MEMBER',
  inputSchema: {
    type: 'object',
    properties: { deliveryId: { type: 'string', format: 'uuid', description: 'A delivery id from list_webhook_deliveries.' } },
    required: ['deliveryId'],
    additionalProperties: false,
  },
  outputSchema: { type: 'object', properties: { delivery: deliverySchema }, required: ['delivery'] },
})
export class ResendWebhookDeliveryTool implements McpToolHandler<{ deliveryId: string }> {
  constructor(private readonly deliveries: DeliveriesService) {}

  async execute(args: { deliveryId: string }, caller: Caller) {
    return { delivery: await this.deliveries.resend(caller, args.deliveryId) };
  }
}
