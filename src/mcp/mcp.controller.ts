import { All, Controller, HttpCode, Inject, Post, Req, Res, UseFilters } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Request, Response } from 'express';
import { CurrentCaller, KeyAction, Public } from '../auth/auth.decorators';
import { KeyCaller } from '../auth/caller';
import { ReadsBody } from '../common/request-body';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { ApiKeyLimits } from '../limits/api-key-limits.service';
import { failure, INVALID_REQUEST } from './json-rpc';
import { McpBodyErrorFilter } from './mcp-body-error.filter';
import { AdmittedRequest } from './mcp-admission.middleware';
import { rateLimitedAnswer, sendAnswer } from './mcp-answer';
import { OriginPolicy } from '../common/origin-policy';
import { McpService, SUPPORTED_PROTOCOL_VERSIONS } from './mcp.service';

export const MCP_PATH = 'api/mcp';

/** Streamable HTTP, stateless: one POST in, one JSON answer out; no SSE stream, no session. */
@ApiExcludeController()
@Controller(MCP_PATH)
export class McpController {
  private readonly origins: OriginPolicy;

  constructor(
    private readonly server: McpService,
    private readonly limits: ApiKeyLimits,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.origins = new OriginPolicy({
      publicBaseUrl: config.publicBaseUrl,
      allowedOrigins: config.mcp.allowedOrigins,
      allowLoopback: config.isDevelopment,
    });
  }

  /** The body is taken raw: McpService parses it itself, to answer bad JSON with -32700. */
  @Post()
  @HttpCode(200)
  // Each tool's permission is checked per call and each message of a batch counts (McpService).
  @KeyAction('per-call')
  @ReadsBody({ as: 'raw', limit: (config) => config.mcp.maxBodyBytes })
  @UseFilters(McpBodyErrorFilter)
  async post(@Req() req: Request & AdmittedRequest, @Res() res: Response, @CurrentCaller() caller: KeyCaller): Promise<void> {
    const origin = req.headers.origin;
    if (origin !== undefined && !this.origins.allows(origin)) {
      res.status(403).json(failure(null, INVALID_REQUEST, `Origin ${origin} is not allowed`));
      return;
    }
    const version = req.headers['mcp-protocol-version'];
    if (version !== undefined && !(SUPPORTED_PROTOCOL_VERSIONS as readonly string[]).includes(String(version))) {
      res
        .status(400)
        .json(failure(null, INVALID_REQUEST, `Unsupported MCP-Protocol-Version ${String(version)}; supported: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')}`));
      return;
    }
    const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    // The handler holds the key's slot too: a client that hangs up does not free it while its calls run.
    const ticket = req.mcpTicket;
    if (!ticket) throw new Error('McpAdmissionMiddleware did not run for this request');
    if (!ticket.hold()) {
      sendAnswer(res, rateLimitedAnswer(this.limits.busy()));
      return;
    }
    try {
      sendAnswer(res, await this.server.handle(body, caller, ticket));
    } finally {
      ticket.release();
    }
  }

  /** No server-initiated stream and no sessions: GET and DELETE are not offered. */
  @All()
  @Public()
  notAllowed(@Res() res: Response): void {
    res.setHeader('Allow', 'POST');
    res.status(405).json(failure(null, INVALID_REQUEST, 'Method not allowed: use POST'));
  }
}
