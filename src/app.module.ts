import { Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { LoggerModule } from 'nestjs-pino';
import { AccountsModule } from './accounts/accounts.module';
import { AdminModule } from './admin/admin.module';
import { AuditModule } from './audit/audit.module';
import { AuthModule } from './auth/auth.module';
import { CommonModule } from './common/common.module';
import { loggerParams } from './common/logging';
import { APP_CONFIG, ConfigModule } from './config/config.module';
import { DatabaseModule } from './database/database.module';
import { HealthModule } from './health/health.module';
import { LimitsModule } from './limits/limits.module';
import { IdentityModule } from './identity/identity.module';
import { EventsModule } from './events/events.module';
import { EventCatalogModule } from './event-catalog/event-catalog.module';
import { McpModule } from './mcp/mcp.module';
import { OAuthModule } from './oauth/oauth.module';
import { MetricsModule } from './ops/metrics/metrics.module';
import { TracingModule } from './ops/tracing/tracing.module';
import { AgentsModule } from './agents/agents.module';
import { AttachmentsModule } from './attachments/attachments.module';
import { EmailChannelModule } from './channels/email/email-channel.module';
import { SmsChannelModule } from './channels/sms/sms-channel.module';
import { ConversationsModule } from './conversations/conversations.module';
import { WebhooksModule } from './webhooks/webhooks.module';
import { DeliveryModule } from './delivery/delivery.module';
import { LiveModule } from './live/live.module';
import { EventFeedModule } from './event-feed/event-feed.module';
import { BackgroundWorkRunner } from './queue/background-work';
import { QueueModule } from './queue/queue.module';
import { AppErrorFilter } from './web/kit/app-error.filter';
import { WebModule } from './web/web.module';

@Module({
  imports: [
    ConfigModule,
    CommonModule,
    LoggerModule.forRootAsync({ inject: [APP_CONFIG], useFactory: loggerParams }),
    DatabaseModule,
    AuditModule,
    MetricsModule,
    TracingModule,
    QueueModule,
    LimitsModule,
    IdentityModule,
    AccountsModule,
    AuthModule,
    OAuthModule,
    AdminModule,
    HealthModule,
    EventsModule,
    EventCatalogModule,
    McpModule,
    WebhooksModule,
    DeliveryModule,
    ConversationsModule,
    SmsChannelModule,
    EmailChannelModule,
    AttachmentsModule,
    AgentsModule,
    LiveModule,
    EventFeedModule,
    WebModule,
  ],
  // The runner is the root's: its shutdown hook runs before the features' modules close what the work uses.
  // The web app's filter: HttpErrorFilter's answers, and the 404 page for an unknown path typed into a browser.
  providers: [{ provide: APP_FILTER, useClass: AppErrorFilter }, BackgroundWorkRunner],
})
export class AppModule {}
