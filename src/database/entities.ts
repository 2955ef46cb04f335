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
import { AgentTurn } from '../messaging/agents/agent-turn.entity';
import { Agent } from '../messaging/agents/agent.entity';
import { Attachment } from '../messaging/attachments/attachment.entity';
import { CalendarEvent } from '../messaging/attachments/calendar-event.entity';
import { OrgAttachmentStorage } from '../messaging/attachments/org-attachment-storage.entity';
import { Contact } from '../messaging/contacts/contact.entity';
import { Identity } from '../messaging/contacts/identity.entity';
import { EmailOpen } from '../messaging/email/email-open.entity';
import { EmailAccountHealth } from '../messaging/mailbox-health/email-account-health.entity';
import { Message } from '../messaging/message.entity';
import { Label } from '../messaging/threads/label.entity';
import { ThreadLabel } from '../messaging/threads/thread-label.entity';
import { Thread } from '../messaging/threads/thread.entity';
import { WebhookEndpointChannel } from '../webhooks/webhook-endpoint-channel.entity';
import { WebhookEndpoint } from '../webhooks/webhook-endpoint.entity';
import { Mailbox } from '../messaging/mailboxes/mailbox.entity';
import { SmsProvider } from '../messaging/sms-providers/sms-provider.entity';
import { PendingSmsReport } from '../messaging/outbound/pending-sms-report.entity';
import { SendIdempotencyKey } from '../messaging/outbound/send-idempotency-key.entity';
import { OAuthClient } from '../oauth/oauth-client.entity';
import { OAuthCode } from '../oauth/oauth-code.entity';
import { OAuthGrant } from '../oauth/oauth-grant.entity';
import { OAuthToken } from '../oauth/oauth-token.entity';
import { SignInLink } from '../web/sessions/sign-in-link.entity';
import { WebSession } from '../web/sessions/web-session.entity';

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
  EmailAccountHealth,
  Contact,
  Identity,
  Thread,
  Message,
  Label,
  ThreadLabel,
  Attachment,
  CalendarEvent,
  OrgAttachmentStorage,
  EmailOpen,
  Agent,
  AgentTurn,
  SignInLink,
  WebSession,
  Mailbox,
  SmsProvider,
  PendingSmsReport,
  SendIdempotencyKey,
  OAuthClient,
  OAuthGrant,
  OAuthCode,
  OAuthToken,
];
