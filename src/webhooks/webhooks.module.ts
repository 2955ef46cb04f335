import { Module } from '@nestjs/common';
import { AccountsModule } from '../accounts/accounts.module';
import { OutboundHttpModule } from '../outbound-http/outbound-http.module';
import { EndpointHealthMonitor } from './endpoint-health.monitor';
import { WEBHOOK_TOOLS } from './webhook.tools';
import { WebhookKeysController } from './webhook-keys.controller';
import { WebhookEndpointsRepository } from './webhook-endpoints.repository';
import { WebhooksService } from './webhooks.service';

@Module({
  // OutboundHttpModule: the URL policy WebhooksService checks an endpoint URL with; re-exported
  // for the pages, which check a URL the same way before they register it.
  imports: [AccountsModule, OutboundHttpModule],
  controllers: [WebhookKeysController],
  providers: [WebhookEndpointsRepository, WebhooksService, EndpointHealthMonitor, ...WEBHOOK_TOOLS],
  exports: [WebhooksService, WebhookEndpointsRepository, OutboundHttpModule],
})
export class WebhooksModule {}
