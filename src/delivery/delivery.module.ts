import { Module } from '@nestjs/common';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { DeliveriesService } from './deliveries.service';
import { ListWebhookDeliveriesTool, ResendWebhookDeliveryTool } from './delivery.tools';

@Module({
  imports: [WebhooksModule],
  providers: [DeliveriesService, ListWebhookDeliveriesTool, ResendWebhookDeliveryTool],
  exports: [DeliveriesService],
})
export class DeliveryModule {}
