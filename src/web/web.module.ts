import { Inject, MiddlewareConsumer, Module, NestModule } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { ConversationsModule } from '../conversations/conversations.module';
import { AgentsModule } from '../agents/agents.module';
import { AttachmentsModule } from '../attachments/attachments.module';
import { DeliveryModule } from '../delivery/delivery.module';
import { EmailChannelModule } from '../channels/email/email-channel.module';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { pageHeaders } from './kit/page-headers';
import { pageSettings } from './kit/page-context';
import { ApiKeysController } from './api-keys/api-keys.controller';
import { AuditController } from './audit/audit.controller';
import { ConversationsController } from './conversations/conversations.controller';
import { ApprovalsController } from './approvals/approvals.controller';
import { ConnectedAppsController } from './connected-apps/connected-apps.controller';
import { ConsentController } from './consent/consent.controller';
import { DevOutboxController } from './dev-outbox/dev-outbox.controller';
import { SendPoliciesModule } from '../send-policies/send-policies.module';
import { SendPoliciesController } from './send-policies/send-policies.controller';
import { MailboxesController } from './mailboxes/mailboxes.controller';
import { SettingsFallbackController } from './settings/settings-fallback.controller';
import { SignInController } from './sign-in/sign-in.controller';
import { WebhooksController } from './webhooks/webhooks.controller';
import { LiveController } from './live/live.controller';
import { WebSessionsModule } from '../auth/web-sessions/web-sessions.module';
import { StaticController } from './static/static.controller';
import { ThreadViewService } from './conversations/thread-view.service';
import { SmsOptOutController } from './sms-opt-out/sms-opt-out.controller';
import { OptOutsModule } from '../opt-outs/opt-outs.module';

/**
 * The controllers of the web app's pages: each gets the page headers (kit/page-headers.ts). Add new
 * page controllers here, before SettingsFallbackController (routes match in this order).
 */
export const PAGE_CONTROLLERS = [
  SignInController,
  ConsentController,
  ApiKeysController,
  ConnectedAppsController,
  WebhooksController,
  MailboxesController,
  SendPoliciesController,
  SmsOptOutController,
  AuditController,
  ConversationsController,
  DevOutboxController,
  ApprovalsController,
  LiveController,
  StaticController,
  SettingsFallbackController,
];

/** The web app for people (docs/web.md): sign-in by emailed link, sessions, and the settings pages. */
@Module({
  controllers: PAGE_CONTROLLERS,
  providers: [ThreadViewService],
  // The pages call the services the MCP tools and admin routes call (API keys: AuthModule; webhooks: WebhooksModule, DeliveryModule;
  // mailboxes: EmailChannelModule; the development outbox: ConversationsModule).
  // Conversations: ConversationsModule, AgentsModule (drafts awaiting approval), AttachmentsModule (read_attachment's reads);
  // Approvals: AgentsModule; Send policies: SendPoliciesModule.
  // Approvals: AgentsModule.
  // SMS opt-out: OptOutsModule (the org's HELP text).
  imports: [
    WebSessionsModule,
    AuthModule,
    WebhooksModule,
    DeliveryModule,
    EmailChannelModule,
    ConversationsModule,
    AgentsModule,
    AttachmentsModule,
    SendPoliciesModule,
    OptOutsModule,
  ],
})
export class WebModule implements NestModule {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(pageHeaders(this.config.publicBaseUrl), pageSettings({ devOutbox: this.config.isDevelopment })).forRoutes(...PAGE_CONTROLLERS);
  }
}
