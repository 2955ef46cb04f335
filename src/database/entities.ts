import { EndpointCapAudit, EndpointCapGrant } from '../accounts/endpoint-cap.entity';
import { LineMembership } from '../accounts/line-membership.entity';
import { Line } from '../accounts/line.entity';
import { Org } from '../accounts/org.entity';
import { User } from '../accounts/user.entity';
import { ApiKey } from '../auth/api-key.entity';
import { WebhookDeliveryAttempt } from '../delivery/webhook-delivery-attempt.entity';
import { WebhookDelivery } from '../delivery/webhook-delivery.entity';
import { WebhookPayload } from '../delivery/webhook-payload.entity';
import { OutboxEvent } from '../events/outbox-event.entity';
import { WebhookEndpointChannel } from '../webhooks/webhook-endpoint-channel.entity';
import { WebhookEndpoint } from '../webhooks/webhook-endpoint.entity';

/** Every entity of the service, registered with the one data source. */
export const ENTITIES = [
  Org,
  User,
  Line,
  LineMembership,
  EndpointCapGrant,
  EndpointCapAudit,
  ApiKey,
  WebhookEndpoint,
  WebhookEndpointChannel,
  WebhookDelivery,
  WebhookDeliveryAttempt,
  WebhookPayload,
  OutboxEvent,
];
