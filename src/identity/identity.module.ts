import { Global, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { ActionGuard, KeyActionAudit } from './action.guard';
import { CredentialAccessRepository } from './credential-access.repository';
import { LinesRepository } from './lines.repository';

/**
 * Who acts, for every surface: the one action guard (permission, budget, concurrency) every
 * principal passes, the start-up audit that every API-key route declares its action, and the one
 * lines repository (a live line by id, by address, or of a user), and what a credential may do
 * now by its id (CredentialAccessRepository).
 */
@Global()
@Module({
  imports: [DiscoveryModule],
  providers: [ActionGuard, KeyActionAudit, LinesRepository, CredentialAccessRepository],
  exports: [ActionGuard, LinesRepository, CredentialAccessRepository],
})
export class IdentityModule {}
