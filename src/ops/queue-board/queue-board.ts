import { createBullBoard } from '@bull-board/api';
import { BullAdapter } from '@bull-board/api/bullAdapter';
import { ExpressAdapter } from '@bull-board/express';
import { INestApplication } from '@nestjs/common';
import { NestExpressApplication } from '@nestjs/platform-express';
import { NextFunction, Request, Response } from 'express';
import { AuthGuard } from '../../auth/auth.guard';
import { bearerToken } from '../../identity/bearer-token';
import { AppConfig } from '../../config/app-config';
import { APP_CONFIG } from '../../config/config.module';
import { OriginPolicy } from '../../common/origin-policy';
import { ServiceQueues } from '../../queue/queue.module';

export const QUEUE_BOARD_PATH = '/admin/queues';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Bull Board (`@bull-board/express`) at /admin/queues: every Bull queue of the service, its jobs,
 * retries and pauses, for operators holding the admin token (docs/operations.md, "Queue dashboard").
 */
export function mountQueueBoard(app: INestApplication): void {
  const config = app.get<AppConfig>(APP_CONFIG);
  const adapter = new ExpressAdapter();
  adapter.setBasePath(QUEUE_BOARD_PATH);
  createBullBoard({
    queues: app
      .get(ServiceQueues)
      .all()
      .map((queue) => new BullAdapter(queue)),
    serverAdapter: adapter,
    options: { uiConfig: { boardTitle: 'Messaging Sync' } },
  });
  const origins = new OriginPolicy({ publicBaseUrl: config.publicBaseUrl, allowedOrigins: [], allowLoopback: config.isDevelopment });
  (app as NestExpressApplication).use(QUEUE_BOARD_PATH, boardAccess(app.get(AuthGuard), origins), adapter.getRouter());
}

/**
 * The admin token, as `Authorization: Bearer <ADMIN_TOKEN>` (scripts) or as the password of HTTP
 * Basic credentials, any user name (a browser asks for them, prompted by the 401's Basic
 * challenge). A browser resends Basic credentials on its own, so a change (any method but GET and
 * HEAD) made with them must come from the board's own pages (Origin, else Sec-Fetch-Site).
 */
function boardAccess(guard: AuthGuard, origins: OriginPolicy) {
  return (request: Request, response: Response, next: NextFunction): void => {
    response.setHeader('Cache-Control', 'no-store');
    const bearer = bearerToken(request);
    const basic = basicPassword(request);
    const token = bearer ?? basic;
    if (token === null || !guard.tokenMatches('admin', token)) {
      response.setHeader('WWW-Authenticate', 'Basic realm="Messaging Sync queues", charset="UTF-8"');
      response.status(401).json({
        statusCode: 401,
        error: 'Unauthorized',
        message: 'the admin token is required: Authorization: Bearer <ADMIN_TOKEN>, or as the password of Basic credentials',
      });
      return;
    }
    if (bearer === null && !SAFE_METHODS.has(request.method) && !origins.sentFromOwnPages(request.headers)) {
      response.status(403).json({ statusCode: 403, error: 'Forbidden', message: "this change was not sent from the queue dashboard's own pages" });
      return;
    }
    next();
  };
}

function basicPassword(request: Request): string | null {
  const match = /^Basic[ ]+([A-Za-z0-9+/=]+)\s*$/i.exec(request.headers.authorization ?? '');
  if (!match) return null;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon === -1 ? null : decoded.slice(colon + 1);
}
