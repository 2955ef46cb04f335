import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AccountsModule } from '../accounts/accounts.module';
import { ApiKey } from './api-key.entity';
import { ApiKeysService } from './api-keys.service';
import { AuthGuard } from './auth.guard';

@Module({
  imports: [TypeOrmModule.forFeature([ApiKey]), AccountsModule],
  providers: [ApiKeysService, AuthGuard, { provide: APP_GUARD, useExisting: AuthGuard }],
  exports: [ApiKeysService, AuthGuard],
})
export class AuthModule {}
