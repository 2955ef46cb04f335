import { Accounts1763800000000 } from './1763800000000-Accounts';
import { Webhooks1763800100000 } from './1763800100000-Webhooks';
import { Outbox1763800200000 } from './1763800200000-Outbox';
import { Messaging1763800300000 } from './1763800300000-Messaging';
import { AgentTurnIndexes1763800450000 } from './1763800450000-AgentTurnIndexes';
import { AttachmentExtractionClaims1763800470000 } from './1763800470000-AttachmentExtractionClaims';
import { WebhookPayloads1763800500000 } from './1763800500000-WebhookPayloads';
import { DeliveryLogRetention1763800510000 } from './1763800510000-DeliveryLogRetention';
import { EmailOpenFetchCounts1763800520000 } from './1763800520000-EmailOpenFetchCounts';
import { AttachmentQuota1763800530000 } from './1763800530000-AttachmentQuota';
import { DeliveryLine1763800540000 } from './1763800540000-DeliveryLine';
import { WebSessions1763800550000 } from './1763800550000-WebSessions';
import { ApiKeyLastUsed1763800560000 } from './1763800560000-ApiKeyLastUsed';
import { DeliveryRecovery1763800570000 } from './1763800570000-DeliveryRecovery';
import { Mailboxes1763800580000 } from './1763800580000-Mailboxes';
import { MailboxSync1763800590000 } from './1763800590000-MailboxSync';
import { SmsProviders1763800600000 } from './1763800600000-SmsProviders';
import { PendingSmsReports1763800610000 } from './1763800610000-PendingSmsReports';
import { DeliveryLease1763800620000 } from './1763800620000-DeliveryLease';
import { EndpointNotices1763800630000 } from './1763800630000-EndpointNotices';
import { TraceParents1763800640000 } from './1763800640000-TraceParents';
import { SendIdempotencyKeys1763800650000 } from './1763800650000-SendIdempotencyKeys';
import { MessageSearch1763800660000 } from './1763800660000-MessageSearch';
import { ThreadLabelsByLabel1763800670000 } from './1763800670000-ThreadLabelsByLabel';
import { ApiKeyPermissions1763800680000 } from './1763800680000-ApiKeyPermissions';
import { OAuth1763800690000 } from './1763800690000-OAuth';
import { BoundedReads1763800700000 } from './1763800700000-BoundedReads';
import { DeliveryLogByStatus1763800710000 } from './1763800710000-DeliveryLogByStatus';
import { OAuthGrantScopes1763800720000 } from './1763800720000-OAuthGrantScopes';
import { StandardWebhooks1763800730000 } from './1763800730000-StandardWebhooks';
import { EventFeedPositions1763800740000 } from './1763800740000-EventFeedPositions';
import { EventSubscriptions1763800750000 } from './1763800750000-EventSubscriptions';
import { SendOrigins1763800760000 } from './1763800760000-SendOrigins';
import { AuditEvents1763800770000 } from './1763800770000-AuditEvents';
import { SmsOptOuts1763800780000 } from './1763800780000-SmsOptOuts';
import { SendPolicies1763800790000 } from './1763800790000-SendPolicies';
import { DraftOnlyCredentials1763800800000 } from './1763800800000-DraftOnlyCredentials';
import { ScheduledSends1763800810000 } from './1763800810000-ScheduledSends';
import { DeliveryLogPartitions1763801000000 } from './1763801000000-DeliveryLogPartitions';
import { ReadinessProbes1763800950000 } from './1763800950000-ReadinessProbes';
import { SendsByKeyRecipient1763801050000 } from './1763801050000-SendsByKeyRecipient';
import { OrgDeliveryLogRetention1763801100000 } from './1763801100000-OrgDeliveryLogRetention';
import { SendCounts1763801110000 } from './1763801110000-SendCounts';
import { ScheduledMessages1763801112000 } from './1763801112000-ScheduledMessages';
import { SendLimitSlot1763801120000 } from './1763801120000-SendLimitSlot';
import { SuccessOnDelivery1763801130000 } from './1763801130000-SuccessOnDelivery';
import { DeliveryEventIdFromId1763801140000 } from './1763801140000-DeliveryEventIdFromId';
import { DeliveryClaimRoom1763801150000 } from './1763801150000-DeliveryClaimRoom';
import { DeliveryIdsInStatement1763801160000 } from './1763801160000-DeliveryIdsInStatement';
import { EventDataLz41763801170000 } from './1763801170000-EventDataLz4';
import { PayloadIdSequence1763801180000 } from './1763801180000-PayloadIdSequence';

/** Migrations in the order they run. */
export const MIGRATIONS = [
  Accounts1763800000000,
  Webhooks1763800100000,
  Outbox1763800200000,
  Messaging1763800300000,
  AgentTurnIndexes1763800450000,
  AttachmentExtractionClaims1763800470000,
  WebhookPayloads1763800500000,
  DeliveryLogRetention1763800510000,
  EmailOpenFetchCounts1763800520000,
  AttachmentQuota1763800530000,
  DeliveryLine1763800540000,
  WebSessions1763800550000,
  ApiKeyLastUsed1763800560000,
  DeliveryRecovery1763800570000,
  Mailboxes1763800580000,
  MailboxSync1763800590000,
  SmsProviders1763800600000,
  PendingSmsReports1763800610000,
  DeliveryLease1763800620000,
  EndpointNotices1763800630000,
  TraceParents1763800640000,
  SendIdempotencyKeys1763800650000,
  MessageSearch1763800660000,
  ThreadLabelsByLabel1763800670000,
  ApiKeyPermissions1763800680000,
  OAuth1763800690000,
  BoundedReads1763800700000,
  DeliveryLogByStatus1763800710000,
  OAuthGrantScopes1763800720000,
  StandardWebhooks1763800730000,
  EventFeedPositions1763800740000,
  EventSubscriptions1763800750000,
  SendOrigins1763800760000,
  AuditEvents1763800770000,
  SmsOptOuts1763800780000,
  SendPolicies1763800790000,
  DraftOnlyCredentials1763800800000,
  ScheduledSends1763800810000,
  ReadinessProbes1763800950000,
  DeliveryLogPartitions1763801000000,
  SendsByKeyRecipient1763801050000,
  OrgDeliveryLogRetention1763801100000,
  SendCounts1763801110000,
  ScheduledMessages1763801112000,
  SendLimitSlot1763801120000,
  SuccessOnDelivery1763801130000,
  DeliveryEventIdFromId1763801140000,
  DeliveryClaimRoom1763801150000,
  DeliveryIdsInStatement1763801160000,
  EventDataLz41763801170000,
  PayloadIdSequence1763801180000,
];
