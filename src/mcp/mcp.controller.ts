import { All, Controller, HttpCode, Inject, Post, Req, Res, UseFilters } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Request, Response } from 'express';
import { CurrentPrincipal, KeyAction, Public } from '../identity/auth.decorators';
import { isGrantId, KeyPrincipal } from '../identity/principal';
import { ReadsBody } from '../common/request-body';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { ApiKeyLimits } from '../limits/api-key-limits.service';
import { failure, INVALID_REQUEST } from './json-rpc';
import { McpBodyErrorFilter } from './mcp-body-error.filter';
import { AdmittedRequest } from './mcp-admission.middleware';
import { rateLimitedAnswer, sendAnswer } from './mcp-answer';
import { OriginPolicy } from '../common/origin-policy';
import { McpService, SERVER_INFO } from './mcp.service';
import { McpSubscriptions } from './mcp-subscriptions';
import { openEventStream } from './mcp-event-streams';
import { EventStreams } from '../event-feed/event-streams';
import { AuthGuard } from '../auth/auth.guard';
import { bearerToken } from '../identity/bearer-token';
import { mcpHeadersOf } from './protocol-eras';
import { RateLimitedError } from '../common/errors';
import { eventStreamOf } from '../common/event-stream';
import { whenResponseCloses } from '../common/response-close';

export const MCP_PATH = 'api/mcp';

/**
 * Streamable HTTP, stateless, both eras on one URL (docs/mcp.md, "Protocol revisions"): one POST
 * in, one JSON answer out, no session; a 2026-07-28 subscriptions/listen is answered with a
 * server-sent event stream (McpSubscriptions), and so is an events/stream of either era (EventStreams).
 */
@ApiExcludeController()
@Controller(MCP_PATH)
export class McpController {
  private readonly origins: OriginPolicy;

  constructor(
    private readonly server: McpService,
    private readonly subscriptions: McpSubscriptions,
    private readonly streams: EventStreams,
    private readonly guard: AuthGuard,
    private readonly limits: ApiKeyLimits,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.origins = new OriginPolicy({
      publicBaseUrl: config.publicBaseUrl,
      allowedOrigins: config.mcp.allowedOrigins,
      allowLoopback: config.isDevelopment,
    });
  }

  /** The body is taken raw: McpService parses it itself, to answer bad JSON with -32700, and chooses the era per request. */
  @Post()
  @HttpCode(200)
  // Each tool's permission is checked per call and each message of a batch counts (McpService).
  @KeyAction('per-call')
  @ReadsBody({ as: 'raw', limit: (config) => config.mcp.maxBodyBytes })
  @UseFilters(McpBodyErrorFilter)
  async post(@Req() req: Request & AdmittedRequest, @Res() res: Response, @CurrentPrincipal() caller: KeyPrincipal): Promise<void> {
    const origin = req.headers.origin;
    if (origin !== undefined && !this.origins.allows(origin)) {
      res.status(403).json(failure(null, INVALID_REQUEST, `Origin ${origin} is not allowed`));
      return;
    }
    const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    // The handler holds the key's slot too: a client that hangs up does not free it while its calls run.
    const ticket = req.mcpTicket;
    if (!ticket) throw new Error('McpAdmissionMiddleware did not run for this request');
    if (!ticket.hold()) {
      sendAnswer(res, rateLimitedAnswer(this.limits.busy(isGrantId(caller.keyId))));
      return;
    }
    const hangUp = new AbortController();
    whenResponseCloses(res, () => hangUp.abort()); // before an answer is written: the client is gone
    let answer;
    try {
      answer = await this.server.handle(body, caller, ticket, mcpHeadersOf(req.headers), hangUp.signal);
    } finally {
      ticket.release();
    }
    if (answer.eventStream) {
      // An event stream runs no calls either (the draft exempts it from the concurrency cap): bounded on its own (EventStreams).
      ticket.releaseAll();
      const token = bearerToken(req)!;
      const recheck = () => this.guard.callerOf(token, req);
      const refused = openEventStream(this.streams, answer.eventStream, caller, recheck, req, res, SERVER_INFO);
      if (refused) sendAnswer(res, refused);
      return;
    }
    if (!answer.listen) return sendAnswer(res, answer);
    // A listen stream runs no calls: it gives its running-call slot back and is bounded on its own (McpSubscriptions).
    ticket.releaseAll();
    const listen = { ...answer.listen, caller, credential: { token: bearerToken(req)!, request: req }, serverInfo: SERVER_INFO };
    try {
      await this.subscriptions.open(listen, eventStreamOf(req, res));
    } catch (error) {
      if (!(error instanceof RateLimitedError)) throw error;
      sendAnswer(res, rateLimitedAnswer(error, listen.id)); // the listen request's id was read: the refusal answers it
    }
  }

  /** No GET stream and no sessions in either era: GET and DELETE are not offered (2026-07-28 listens by POST). */
  @All()
  @Public()
  notAllowed(@Res() res: Response): void {
    res.setHeader('Allow', 'POST');
    res.status(405).json(failure(null, INVALID_REQUEST, 'Method not allowed: use POST'));
  }
}
