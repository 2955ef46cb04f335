import { Module } from '@nestjs/common';
import { AccountsModule } from '../accounts/accounts.module';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { DnsHostResolver, HOST_RESOLVER, HostResolver, URL_POLICY_OPTIONS, UrlPolicy, UrlPolicyOptions } from './url-policy/url-policy';
import { EndpointHealthMonitor } from './endpoint-health.monitor';
import { WEBHOOK_TOOLS } from './webhook.tools';
import { WebhookKeysController } from './webhook-keys.controller';
import { WebhookEndpointsRepository } from './webhook-endpoints.repository';
import { WebhooksService } from './webhooks.service';

@Module({
  imports: [AccountsModule],
  controllers: [WebhookKeysController],
  providers: [
    { provide: HOST_RESOLVER, useClass: DnsHostResolver },
    {
      provide: URL_POLICY_OPTIONS,
      inject: [APP_CONFIG, HOST_RESOLVER],
      useFactory: (config: AppConfig, resolver: HostResolver): UrlPolicyOptions => ({
        allowHttp: config.isDevelopment,
        allowedCidrs: config.webhooks.allowedCidrs,
        resolver,
      }),
    },
    UrlPolicy,
    WebhookEndpointsRepository,
    WebhooksService,
    EndpointHealthMonitor,
    ...WEBHOOK_TOOLS,
  ],
  exports: [WebhooksService, UrlPolicy, HOST_RESOLVER, WebhookEndpointsRepository],
})
export class WebhooksModule {}
