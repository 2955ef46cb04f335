import { Global, Module } from '@nestjs/common';
import { ApiKeyLimits } from './api-key-limits.service';
import { IpRateLimitGuard } from './ip-rate-limit.guard';
import { RateLimits } from './rate-limits.service';

/**
 * The mechanisms of rate and concurrency limits (budgets in Redis, running-call slots), knowing no
 * principal: identity's ActionGuard applies them per API key and per person, IpRateLimitGuard per
 * client IP on public routes.
 */
@Global()
@Module({
  providers: [RateLimits, ApiKeyLimits, IpRateLimitGuard],
  exports: [RateLimits, ApiKeyLimits, IpRateLimitGuard],
})
export class LimitsModule {}
