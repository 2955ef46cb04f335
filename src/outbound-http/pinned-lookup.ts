import { isIP } from 'node:net';

/**
 * The `connect.lookup` of an undici dispatcher that pins its sockets to one address the URL policy
 * checked: whatever the URL's name answers later (DNS rebinding), the socket goes there, while the
 * TLS server name and Host header stay the URL's host.
 */
export function pinnedLookup(address: string): (host: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => void {
  const family = isIP(address);
  return (_host, options, callback) => {
    if (options?.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  };
}
