import { NextFunction, Request, Response } from 'express';
import { ServiceMetrics } from './service-metrics';

/** Catch-all patterns that answer 404 for any path (Nest's own not-found route is `/{*path}`). */
const CATCH_ALL = new Set(['*', '/*', '/{*path}', '/*path']);

/**
 * Express middleware: each answered request's duration, by the pattern of the route that served
 * it (`/v1/webhooks/:id`, never the id itself) and its status. Paths no route matched (scans,
 * static assets, Nest's catch-all 404) share the label "other", so a client cannot mint label values.
 */
export function httpMetrics(metrics: ServiceMetrics) {
  return (request: Request, response: Response, next: NextFunction): void => {
    const started = process.hrtime.bigint();
    response.once('finish', () => {
      metrics.httpAnswered(routeOf(request), response.statusCode, Number(process.hrtime.bigint() - started) / 1e9);
    });
    next();
  };
}

/** The pattern of the route that served the request (`/v1/webhooks/:id`), or "other" when none matched. */
export function routeOf(request: Request): string {
  const pattern = (request.route as { path?: unknown } | undefined)?.path;
  return typeof pattern === 'string' && !CATCH_ALL.has(pattern) ? `${request.baseUrl}${pattern}` : 'other';
}
