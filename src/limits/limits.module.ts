import { Global, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { ApiKeyLimits } from './api-key-limits.service';
import { IpRateLimitGuard } from './ip-rate-limit.guard';
import { KeyActionAudit, KeyActionGuard } from './key-action.guard';
import { RateLimits } from './rate-limits.service';

/** Rate and concurrency limits: per API key on every route that acts for a key, per client IP on public routes. */
@Global()
@Module({
  imports: [DiscoveryModule],
  providers: [RateLimits, ApiKeyLimits, IpRateLimitGuard, KeyActionGuard, KeyActionAudit],
  exports: [RateLimits, ApiKeyLimits, IpRateLimitGuard, KeyActionGuard],
})
export class LimitsModule {}
