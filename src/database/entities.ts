/* eslint-disable import-x/no-restricted-paths -- KNOWN FLOOR VIOLATION (issue 44): the one entity list the
   app and the TypeORM CLI (ormconfig.ts) load imports every feature's *.entity.ts; the kernel floor holds
   for the rest of database/. Lifting it needs the features to register their entities instead. */
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
import { EventSubscription } from '../event-feed/event-subscription.entity';
import { OutboxFeedHorizon } from '../events/outbox-feed-horizon.entity';
import { ReadinessProbe } from '../health/readiness-probe.entity';
import { AgentTurn } from '../agents/agent-turn.entity';
import { Agent } from '../agents/agent.entity';
import { Attachment } from '../attachments/attachment.entity';
import { CalendarEvent } from '../attachments/calendar-event.entity';
import { OrgAttachmentStorage } from '../attachments/org-attachment-storage.entity';
import { Contact } from '../conversations/contacts/contact.entity';
import { Identity } from '../conversations/contacts/identity.entity';
import { EmailOpen } from '../channels/email/email-open.entity';
import { EmailAccountHealth } from '../channels/email/mailbox-health/email-account-health.entity';
import { Message } from '../conversations/message.entity';
import { SendPolicy } from '../send-policies/send-policy.entity';
import { SendCount } from '../send-policies/send-count.entity';
import { Label } from '../conversations/threads/label.entity';
import { ThreadLabel } from '../conversations/threads/thread-label.entity';
import { Thread } from '../conversations/threads/thread.entity';
import { WebhookEndpointChannel } from '../webhooks/webhook-endpoint-channel.entity';
import { WebhookEndpoint } from '../webhooks/webhook-endpoint.entity';
import { Mailbox } from '../channels/email/mailboxes/mailbox.entity';
import { SmsProvider } from '../channels/sms/sms-provider.entity';
import { PendingSmsReport } from '../channels/sms/pending-sms-report.entity';
import { SendIdempotencyKey } from '../conversations/outbound/send-idempotency-key.entity';
import { ScheduledMessage } from '../conversations/outbound/scheduled-message.entity';
import { SmsHelpText } from '../opt-outs/sms-help-text.entity';
import { SmsOptOut } from '../opt-outs/sms-opt-out.entity';
import { OAuthClient } from '../oauth/oauth-client.entity';
import { OAuthCode } from '../oauth/oauth-code.entity';
import { OAuthGrant } from '../oauth/oauth-grant.entity';
import { OAuthToken } from '../oauth/oauth-token.entity';
import { SignInLink } from '../auth/web-sessions/sign-in-link.entity';
import { AuditEvent } from '../audit/audit-event.entity';
import { WebSession } from '../auth/web-sessions/web-session.entity';

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
  EventSubscription,
  OutboxFeedHorizon,
  ReadinessProbe,
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
  ScheduledMessage,
  SmsOptOut,
  SmsHelpText,
  OAuthClient,
  OAuthGrant,
  OAuthCode,
  OAuthToken,
  SendPolicy,
  SendCount,
  AuditEvent,
];
