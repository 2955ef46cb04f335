import { Global, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { ActionGuard, KeyActionAudit } from './action.guard';
import { LinesRepository } from './lines.repository';

/**
 * Who acts, for every surface: the one action guard (permission, budget, concurrency) every
 * principal passes, the start-up audit that every API-key route declares its action, and the one
 * lines repository (a live line by id, by address, or of a user).
 */
@Global()
@Module({
  imports: [DiscoveryModule],
  providers: [ActionGuard, KeyActionAudit, LinesRepository],
  exports: [ActionGuard, LinesRepository],
})
export class IdentityModule {}
