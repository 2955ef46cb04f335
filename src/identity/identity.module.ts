import { Global, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { ActionGuard, KeyActionAudit } from './action.guard';

/**
 * Who acts, for every surface: the one action guard (permission, budget, concurrency) every
 * principal passes, and the start-up audit that every API-key route declares its action.
 */
@Global()
@Module({
  imports: [DiscoveryModule],
  providers: [ActionGuard, KeyActionAudit],
  exports: [ActionGuard],
})
export class IdentityModule {}
