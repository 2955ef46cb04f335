import { applyDecorators, CanActivate, ExecutionContext, Injectable, SetMetadata, UseGuards } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { Request } from 'express';
import { clientKey } from '../common/client-address';
import { RateLimitName } from '../config/app-config';
import { RateLimits } from './rate-limits.service';

const PER_IP_LIMIT = 'limits:per-ip';

/** Counts every request of the route against the client IP's budget of the named limit (429 when spent). */
@Injectable()
export class IpRateLimitGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly rateLimits: RateLimits,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const name = this.reflector.getAllAndOverride<RateLimitName | undefined>(PER_IP_LIMIT, [context.getHandler(), context.getClass()]);
    if (!name) return true;
    const request = context.switchToHttp().getRequest<Request>();
    await this.rateLimits.consume(name, clientKey(request.ip), 1, 'this address');
    return true;
  }
}

/** Limits a public route per client IP (the IP as `TRUST_PROXY` makes it) with the named limit. */
export const RateLimitPerIp = (name: RateLimitName) => applyDecorators(SetMetadata(PER_IP_LIMIT, name), UseGuards(IpRateLimitGuard));
