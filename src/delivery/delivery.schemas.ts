import { argumentCheck } from '../tools/tool-arguments';
import { cursorArgument } from '../tools/tool-schemas';
import { RESULT_BOUNDS, textWindowArguments } from '../common/result-bounds';
import { endpointIdSchema } from '../webhooks/webhook.schemas';
import { RECOVER_MAX_WINDOW_DAYS } from './deliveries.service';
import { DELIVERY_STATUSES } from './webhook-delivery.entity';

/** JSON Schemas of the delivery tools' arguments: one source for their validation, tools/list and the web pages' checks. */

/** list_webhook_deliveries' arguments: also the endpoint page's log filter (status, cursor). */
export const listWebhookDeliveriesInput = {
  type: 'object',
  properties: {
    endpointId: endpointIdSchema,
    cursor: cursorArgument,
    status: {
      type: 'string',
      enum: [...DELIVERY_STATUSES],
      description: 'Only deliveries in this status. Keep the same status when you pass a nextCursor.',
    },
  },
  required: ['endpointId'],
  additionalProperties: false,
} as const;

/** resend_webhook_delivery's arguments. */
export const resendWebhookDeliveryInput = {
  type: 'object',
  properties: { deliveryId: { type: 'string', format: 'uuid', description: 'A delivery id from list_webhook_deliveries.' } },
  required: ['deliveryId'],
  additionalProperties: false,
} as const;

/** get_webhook_delivery's arguments: also a page's delivery id. */
export const getWebhookDeliveryInput = {
  type: 'object',
  properties: {
    deliveryId: { type: 'string', format: 'uuid', description: 'A delivery id from list_webhook_deliveries.' },
    ...textWindowArguments("the envelope's JSON text", RESULT_BOUNDS.envelopeTextChars, RESULT_BOUNDS.maxEnvelopeTextChars),
  },
  required: ['deliveryId'],
  additionalProperties: false,
} as const;

/** recover_webhook_deliveries' arguments: also the Recover form's window. */
export const recoverWebhookDeliveriesInput = {
  type: 'object',
  properties: {
    endpointId: endpointIdSchema,
    since: {
      type: 'string',
      format: 'date-time',
      description: `Start of the window (inclusive), ISO 8601 with a time zone: recover failed deliveries of events created at or after it. Within the delivery log's retention, at most ${RECOVER_MAX_WINDOW_DAYS} days before until.`,
    },
    until: {
      type: 'string',
      format: 'date-time',
      description: 'End of the window (exclusive), ISO 8601 with a time zone. Defaults to now.',
    },
  },
  required: ['endpointId', 'since'],
  additionalProperties: false,
} as const;

/**
 * The delivery tools' argument checks for the other surfaces (the webhook pages): the tools' own
 * input schemas, judged as the MCP registry judges them, so a page accepts exactly what the tool does.
 */
export const deliveryArguments = {
  list: argumentCheck(listWebhookDeliveriesInput),
  detail: argumentCheck(getWebhookDeliveryInput),
  recover: argumentCheck(recoverWebhookDeliveriesInput),
};
