import { Server } from 'node:http';
import { AppConfig } from '../config/app-config';

/**
 * Timeouts of the HTTP server, suited to a public service (docs/security.md): a client that sends
 * its headers or its request too slowly gets 408 and is disconnected, and an idle keep-alive
 * connection is closed. Node checks these deadlines on a timer (every 30 s unless told otherwise),
 * so it is made to check every second at least.
 *
 * `Expect: 100-continue` is answered only once the request is authenticated: Node would say
 * "100 Continue" at once; here the request goes on to the router, which answers 401 (the client
 * never sends the body) or, when the body is read, sends the 100 then (RequestInputGuard).
 */
export function applyHttpServerLimits(server: Server, limits: AppConfig['http']): void {
  server.requestTimeout = limits.requestTimeoutMs;
  server.headersTimeout = limits.headersTimeoutMs;
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  // Read when the server starts listening (Node 18.12+): the period of the deadline checks.
  (server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval = Math.min(1000, Math.floor(limits.headersTimeoutMs / 2));
  if (server.listenerCount('checkContinue') === 0) server.on('checkContinue', (request, response) => server.emit('request', request, response));
}
