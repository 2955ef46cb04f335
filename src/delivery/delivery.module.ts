import { BullModule } from '@nestjs/bull';
import { Module } from '@nestjs/common';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { DeliveriesService } from './deliveries.service';
import { DeliveryAttemptsService } from './delivery-attempts.service';
import { DELIVERY_QUEUE, DeliveryQueue } from './delivery-queue';
import { DeliveryLogRetention } from './delivery-log-retention';
import { DeliverySweeper } from './delivery-sweeper';
import { DeliveryProcessor } from './delivery.processor';
import { ListWebhookDeliveriesTool, ResendWebhookDeliveryTool } from './delivery.tools';
import { FanOutSubscriber } from './fan-out.subscriber';
import { WebhookSender } from './webhook-sender';

/** Fan-out of bus events to endpoints, signing, sending, retries, the delivery log and resend. */
@Module({
  imports: [
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
    DeliveriesService,
    DeliveryAttemptsService,
    DeliveryProcessor,
    DeliverySweeper,
    DeliveryLogRetention,
    FanOutSubscriber,
    WebhookSender,
    ListWebhookDeliveriesTool,
    ResendWebhookDeliveryTool,
  ],
  exports: [DeliveriesService, DeliveryQueue, DeliveryAttemptsService, DeliverySweeper, DeliveryLogRetention],
})
export class DeliveryModule {}
