import { BullModule } from '@nestjs/bull';
import { Module } from '@nestjs/common';
import { AttachmentUrls } from '../common/attachment-urls';
import { Clock, SystemClock } from '../common/clock';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { DeliveriesService } from './deliveries.service';
import { DeliveryAttemptsService } from './delivery-attempts.service';
import { DELIVERY_QUEUE, DeliveryQueue } from './delivery-queue';
import { DeliverySweeper } from './delivery-sweeper';
import { DeliveryProcessor } from './delivery.processor';
import { ListWebhookDeliveriesTool, ResendWebhookDeliveryTool } from './delivery.tools';
import { FanOutSubscriber } from './fan-out.subscriber';
import { WebhookSender } from './webhook-sender';

/** Fan-out of bus events to endpoints, signing, sending, retries, the delivery log and resend. */
@Module({
  imports: [WebhooksModule, BullModule.registerQueue({ name: DELIVERY_QUEUE })],
  providers: [
    { provide: Clock, useClass: SystemClock },
    AttachmentUrls,
    DeliveryQueue,
    DeliveriesService,
    DeliveryAttemptsService,
    DeliveryProcessor,
    DeliverySweeper,
    FanOutSubscriber,
    WebhookSender,
    ListWebhookDeliveriesTool,
    ResendWebhookDeliveryTool,
  ],
  exports: [DeliveriesService, DeliveryQueue, DeliveryAttemptsService, DeliverySweeper],
})
export class DeliveryModule {}
