import { Module } from '@nestjs/common';
import { SendPoliciesRepository } from './send-policies.repository';
import { SendPoliciesService } from './send-policies.service';

/**
 * Send policies (docs/send-policies.md): per-org rules with per-credential overrides on what an API
 * key or OAuth grant may send. The send gate (conversations/outbound/send-gate.ts) asks the service;
 * the admin API and the settings page edit through it.
 */
@Module({
  providers: [SendPoliciesRepository, SendPoliciesService],
  exports: [SendPoliciesService],
})
export class SendPoliciesModule {}
