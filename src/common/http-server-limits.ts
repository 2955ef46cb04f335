import { Server } from 'node:http';

/**
 * `Expect: 100-continue` is answered only once the request is authenticated: Node would say
 * "100 Continue" at once; here the request goes on to the router, which answers 401 (the client
 * never sends the body) or, when the body is read, sends the 100 then (RequestBodyInterceptor).
 */
export function applyHttpServerLimits(server: Server): void {
  if (server.listenerCount('checkContinue') === 0) server.on('checkContinue', (request, response) => server.emit('request', request, response));
}
