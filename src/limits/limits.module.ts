import { Global, Module } from '@nestjs/common';
import { ApiKeyLimits } from './api-key-limits.service';
import { IpRateLimitGuard } from './ip-rate-limit.guard';
import { RateLimits } from './rate-limits.service';

/** Rate and concurrency limits: per API key on the tool endpoint, per client IP on public routes. */
@Global()
@Module({
  providers: [RateLimits, ApiKeyLimits, IpRateLimitGuard],
  exports: [RateLimits, ApiKeyLimits, IpRateLimitGuard],
})
export class LimitsModule {}
