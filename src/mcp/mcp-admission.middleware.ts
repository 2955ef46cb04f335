import { Injectable, NestMiddleware } from '@nestjs/common';
import { NextFunction, Request, Response } from 'express';
import { bearerToken } from '../identity/bearer-token';
import { RateLimitedError } from '../common/errors';
import { whenResponseCloses } from '../common/response-close';
import { ApiKeyLimits, KeyTicket } from '../limits/api-key-limits.service';
import { rateLimitedAnswer, sendAnswer } from './mcp-answer';

export interface AdmittedRequest {
  mcpTicket?: KeyTicket;
}

/**
 * Runs before the API-key guard: a key that already has all its calls running is refused here
 * (429), before its key is looked up or its body parsed, so a flood of refused requests costs no
 * database round trip. The slot is held until the connection closes (and by the handler, see
 * McpController), then given back.
 */
@Injectable()
export class McpAdmissionMiddleware implements NestMiddleware {
  constructor(private readonly limits: ApiKeyLimits) {}

  use(req: Request & AdmittedRequest, res: Response, next: NextFunction): void {
    const token = bearerToken(req);
    if (token === null) return next(); // the guard answers 401
    let ticket: KeyTicket;
    try {
      ticket = this.limits.enter(token);
    } catch (error) {
      if (error instanceof RateLimitedError) return sendAnswer(res, rateLimitedAnswer(error));
      throw error;
    }
    req.mcpTicket = ticket;
    whenResponseCloses(res, () => ticket.release());
    next();
  }
}
