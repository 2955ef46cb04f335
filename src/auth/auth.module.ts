import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { AccountsModule } from '../accounts/accounts.module';
import { ApiKeysRepository } from './api-keys.repository';
import { ApiKeysService } from './api-keys.service';
import { AuthGuard } from './auth.guard';
import { CredentialChanges } from './credential-changes';
import { PersonApiKeysService } from './person-api-keys.service';

@Module({
  imports: [AccountsModule],
  providers: [ApiKeysRepository, ApiKeysService, PersonApiKeysService, CredentialChanges, AuthGuard, { provide: APP_GUARD, useExisting: AuthGuard }],
  exports: [ApiKeysService, PersonApiKeysService, CredentialChanges, AuthGuard],
})
export class AuthModule {}
