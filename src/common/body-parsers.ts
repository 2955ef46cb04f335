import { INestApplication } from '@nestjs/common';
import { json, NextFunction, raw, Request, RequestHandler, Response } from 'express';

interface BodyParserError {
  type?: string;
  status?: number;
  limit?: number;
}

/**
 * Body parsing with answers we choose: a route family may take its body raw (the MCP endpoint
 * parses its own JSON to answer -32700); everything else is JSON. Oversize → 413, bad JSON → 400,
 * always as JSON, never an HTML page.
 */
export function registerBodyParsers(
  app: INestApplication,
  options: { rawRoutes: Array<{ path: string; limit: number; onError: (res: Response, status: number, message: string) => void }>; jsonLimit: number },
): void {
  for (const route of options.rawRoutes) {
    app.use(route.path, guarded(raw({ type: () => true, limit: route.limit }), route.onError));
  }
  app.use(
    guarded(json({ limit: options.jsonLimit }), (res, status, message) =>
      res.status(status).json({ statusCode: status, error: status === 413 ? 'Payload Too Large' : 'Bad Request', message }),
    ),
  );
}

function guarded(parser: RequestHandler, onError: (res: Response, status: number, message: string) => void): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    parser(req, res, (error?: unknown) => {
      if (!error) return next();
      const e = error as BodyParserError;
      if (e.type === 'entity.too.large') return onError(res, 413, `the request body is larger than ${e.limit} bytes`);
      if (e.type === 'entity.parse.failed') return onError(res, 400, 'the request body is not valid JSON');
      return onError(res, e.status && e.status >= 400 && e.status < 500 ? e.status : 400, 'the request body could not be read');
    });
  };
}
