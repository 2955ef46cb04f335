import { Module } from '@nestjs/common';
import { AccountsModule } from '../accounts/accounts.module';
import { AuthModule } from '../auth/auth.module';
import { AdminAccountsController } from './admin-accounts.controller';
import { AdminApiKeysController } from './admin-api-keys.controller';
import { AdminEndpointCapController } from './admin-endpoint-cap.controller';

/** Internal operator surface, guarded by ADMIN_TOKEN. */
@Module({
  imports: [AccountsModule, AuthModule],
  controllers: [AdminAccountsController, AdminApiKeysController, AdminEndpointCapController],
})
export class AdminModule {}
