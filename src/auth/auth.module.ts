import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { AccountsModule } from '../accounts/accounts.module';
import { ApiKeysRepository } from './api-keys.repository';
import { ApiKeysService } from './api-keys.service';
import { AuthGuard } from './auth.guard';
import { CredentialChanges } from './credential-changes';
import { CreateApiKey } from './key-management/create-api-key.usecase';
import { RevokeApiKey } from './key-management/revoke-api-key.usecase';
import { UpdateApiKeyAccess } from './key-management/update-api-key-access.usecase';
import { PersonApiKeysService } from './person-api-keys.service';

@Module({
  imports: [AccountsModule],
  providers: [
    ApiKeysRepository,
    CreateApiKey,
    UpdateApiKeyAccess,
    RevokeApiKey,
    ApiKeysService,
    PersonApiKeysService,
    CredentialChanges,
    AuthGuard,
    { provide: APP_GUARD, useExisting: AuthGuard },
  ],
  exports: [ApiKeysService, PersonApiKeysService, CredentialChanges, AuthGuard],
})
export class AuthModule {}
