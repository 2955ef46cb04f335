import * as ipaddr from 'ipaddr.js';

/**
 * The bucket of a client address, for everything counted per client (the per-IP rate limits, the
 * share of the pre-authentication body budget): `request.ip`, which is the TCP peer's address, or
 * the one `TRUST_PROXY` lets Express read from X-Forwarded-For. An IPv4 address as is (also when
 * written IPv4-mapped), an IPv6 address by its /64, the block one subscriber usually holds whole
 * (so rotating addresses in it does not give a client fresh budgets).
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
