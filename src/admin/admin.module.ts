import { Module } from '@nestjs/common';
import { AccountsModule } from '../accounts/accounts.module';
import { AuthModule } from '../auth/auth.module';
import { AgentsModule } from '../agents/agents.module';
import { AttachmentsModule } from '../attachments/attachments.module';
import { EmailChannelModule } from '../channels/email/email-channel.module';
import { SmsChannelModule } from '../channels/sms/sms-channel.module';
import { SendPoliciesModule } from '../send-policies/send-policies.module';
import { AdminAccountsController } from './admin-accounts.controller';
import { AdminAgentsController } from './admin-agents.controller';
import { AdminAuditEventsController } from './admin-audit-events.controller';
import { AdminApiKeysController } from './admin-api-keys.controller';
import { AdminAttachmentQuotaController } from './admin-attachment-quota.controller';
import { AdminDeliveryLogRetentionController } from './admin-delivery-log-retention.controller';
import { AdminEndpointCapController } from './admin-endpoint-cap.controller';
import { AdminMailboxesController } from './admin-mailboxes.controller';
import { AdminOAuthGrantsController } from './admin-oauth-grants.controller';
import { AdminSendPoliciesController } from './admin-send-policies.controller';
import { AdminSmsProvidersController } from './admin-sms-providers.controller';
import { AdminWebSessionsController } from './admin-web-sessions.controller';
import { AdminSmsHelpTextController } from './admin-sms-help-text.controller';
import { OptOutsModule } from '../opt-outs/opt-outs.module';
import { DeliveryModule } from '../delivery/delivery.module';

/** Internal operator surface, guarded by ADMIN_TOKEN. */
@Module({
  imports: [
    AccountsModule,
    AuthModule,
    AgentsModule,
    AttachmentsModule,
    EmailChannelModule,
    SmsChannelModule,
    SendPoliciesModule,
    OptOutsModule,
    DeliveryModule,
  ],
  controllers: [
    AdminAccountsController,
    AdminApiKeysController,
    AdminEndpointCapController,
    AdminAgentsController,
    AdminAttachmentQuotaController,
    AdminDeliveryLogRetentionController,
    AdminWebSessionsController,
    AdminOAuthGrantsController,
    AdminMailboxesController,
    AdminSmsProvidersController,
    AdminSendPoliciesController,
    AdminSmsHelpTextController,
    AdminAuditEventsController,
  ],
})
export class AdminModule {}
