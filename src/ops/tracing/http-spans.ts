import { NextFunction, Request, Response } from 'express';
import { whenResponseCloses } from '../../common/response-close';
import { routeOf } from '../metrics/http-metrics';
import { linkTo, SpanKind, startSpan, within } from './traces';

/**
 * Express middleware: one server span per request, the root of whatever the request causes
 * (an ingested message, a tool call, their events and deliveries). Its name is the route's
 * pattern (`POST /ingest/sms/inbound`, `GET /t/o/:token`), never the path, so a token in a URL
 * never reaches a trace; the client's `traceparent`, if any, becomes a link, not the parent: the
 * service keeps its own trace and sampling decision whatever a caller sends. Nothing when off.
 */
export function httpSpans() {
  return (request: Request, response: Response, next: NextFunction): void => {
    const header = request.headers.traceparent;
    const span = startSpan(request.method, {
      kind: SpanKind.SERVER,
      attributes: { 'http.request.method': request.method },
      links: linkTo(typeof header === 'string' ? header : undefined),
    });
    if (!span) return next();
    whenResponseCloses(response, () => {
      const route = routeOf(request);
      span.updateName(`${request.method} ${route}`);
      span.setAttributes({ 'http.route': route, 'http.response.status_code': response.statusCode });
      span.end();
    });
    within(span, next);
  };
}
