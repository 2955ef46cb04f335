import { Global, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { ApiKeyLimits } from './api-key-limits.service';
import { IpRateLimitGuard } from './ip-rate-limit.guard';
import { KeyActionAudit, KeyActionGuard } from './key-action.guard';
import { RateLimits } from './rate-limits.service';
import { SessionActionGuard } from './session-action.guard';

/** Rate and concurrency limits: per API key on every route that acts for a key, per person on every web action, per client IP on public routes. */
@Global()
@Module({
  imports: [DiscoveryModule],
  providers: [RateLimits, ApiKeyLimits, IpRateLimitGuard, KeyActionGuard, KeyActionAudit, SessionActionGuard],
  exports: [RateLimits, ApiKeyLimits, IpRateLimitGuard, KeyActionGuard, SessionActionGuard],
})
export class LimitsModule {}
