import { BullModule } from '@nestjs/bull';
import { Module } from '@nestjs/common';
import { ProbePoolModule } from '../database/probe-pool';
import { OutboundHttpModule } from '../outbound-http/outbound-http.module';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { DeliveriesRepository } from './deliveries.repository';
import { DeliveriesService } from './deliveries.service';
import { DeliveryAttemptsRepository } from './delivery-attempts.repository';
import { DeliveryAttemptsService } from './delivery-attempts.service';
import { DELIVERY_QUEUE, DeliveryQueue } from './delivery-queue';
import { OrgDeliveryLogRetention } from './org-delivery-log-retention';
import { OrgDeliveryLogRetentionRepository } from './org-delivery-log-retention.repository';
import { DeliveryLogRetention } from './delivery-log-retention';
import { DeliveryLogPartitions } from './delivery-log-partitions';
import { DeliveryLogPartitionsRepository } from './delivery-log-partitions.repository';
import { DeliverySweeper } from './delivery-sweeper';
import { DeliveryProcessor } from './delivery.processor';
import { GetWebhookDeliveryTool, ListWebhookDeliveriesTool, RecoverWebhookDeliveriesTool, ResendWebhookDeliveryTool } from './delivery.tools';
import { FanOutSubscriber } from './fan-out.subscriber';
import { WebhookSender } from './webhook-sender';

/** Fan-out of bus events to endpoints, signing, sending, retries, the delivery log and resend. */
@Module({
  imports: [
    OutboundHttpModule,
    ProbePoolModule,
    WebhooksModule,
    BullModule.registerQueue({
      name: DELIVERY_QUEUE,
      // A job whose worker died is noticed within seconds, not Bull's default 30 s; the lock is
      // renewed every lockDuration/2 while an attempt runs, and the database claim makes a
      // stalled job that is run again a no-op.
      settings: { lockDuration: 15_000, stalledInterval: 5_000, maxStalledCount: 2 },
    }),
  ],
  providers: [
    DeliveryQueue,
    DeliveriesRepository,
    DeliveriesService,
    DeliveryAttemptsRepository,
    DeliveryAttemptsService,
    DeliveryProcessor,
    DeliverySweeper,
    DeliveryLogRetention,
    OrgDeliveryLogRetention,
    OrgDeliveryLogRetentionRepository,
    DeliveryLogPartitions,
    DeliveryLogPartitionsRepository,
    FanOutSubscriber,
    WebhookSender,
    ListWebhookDeliveriesTool,
    ResendWebhookDeliveryTool,
    GetWebhookDeliveryTool,
    RecoverWebhookDeliveriesTool,
  ],
  exports: [
    DeliveriesService,
    DeliveryQueue,
    FanOutSubscriber,
    DeliveryAttemptsService,
    DeliverySweeper,
    DeliveryLogRetention,
    OrgDeliveryLogRetention,
    DeliveryLogPartitions,
    WebhookSender,
  ],
})
export class DeliveryModule {}
