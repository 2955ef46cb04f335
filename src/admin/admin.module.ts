import { Module } from '@nestjs/common';
import { AccountsModule } from '../accounts/accounts.module';
import { AuthModule } from '../auth/auth.module';
import { AgentsModule } from '../messaging/agents/agents.module';
import { MailboxesModule } from '../messaging/mailboxes/mailboxes.module';
import { MessagingCoreModule } from '../messaging/messaging-core.module';
import { SmsProvidersModule } from '../messaging/sms-providers/sms-providers.module';
import { AdminAccountsController } from './admin-accounts.controller';
import { AdminAgentsController } from './admin-agents.controller';
import { AdminApiKeysController } from './admin-api-keys.controller';
import { AdminAttachmentQuotaController } from './admin-attachment-quota.controller';
import { AdminEndpointCapController } from './admin-endpoint-cap.controller';
import { AdminMailboxesController } from './admin-mailboxes.controller';
import { AdminOAuthGrantsController } from './admin-oauth-grants.controller';
import { AdminSmsProvidersController } from './admin-sms-providers.controller';
import { AdminWebSessionsController } from './admin-web-sessions.controller';

/** Internal operator surface, guarded by ADMIN_TOKEN. */
@Module({
  imports: [AccountsModule, AuthModule, AgentsModule, MessagingCoreModule, MailboxesModule, SmsProvidersModule],
  controllers: [
    AdminAccountsController,
    AdminApiKeysController,
    AdminEndpointCapController,
    AdminAgentsController,
    AdminAttachmentQuotaController,
    AdminWebSessionsController,
    AdminOAuthGrantsController,
    AdminMailboxesController,
    AdminSmsProvidersController,
  ],
})
export class AdminModule {}
