import { applyDecorators, CanActivate, ExecutionContext, Injectable, SetMetadata, UseGuards } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { Request } from 'express';
import * as ipaddr from 'ipaddr.js';
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

/**
 * The bucket of a client address: an IPv4 address as is (also when written IPv4-mapped), an IPv6
 * address by its /64, the block one subscriber usually holds whole (so rotating addresses in it
 * does not give a client fresh budgets).
 */
export function clientKey(ip: string | undefined): string {
  if (!ip || !ipaddr.isValid(ip)) return 'unknown';
  const address = ipaddr.process(ip);
  if (address.kind() === 'ipv4') return address.toString();
  return `${(address as ipaddr.IPv6).parts
    .slice(0, 4)
    .map((part) => part.toString(16))
    .join(':')}::/64`;
}
