import { Controller, Get, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Request, Response } from 'express';
import { Public } from '../../identity/auth.decorators';
import { MetricsEndpoint } from './metrics-endpoint';

/** GET /metrics on the api's own port (its token rule is MetricsEndpoint's, not the API keys'). */
@ApiExcludeController()
@Public()
@Controller('metrics')
export class MetricsController {
  constructor(private readonly endpoint: MetricsEndpoint) {}

  @Get()
  metrics(@Req() request: Request, @Res() response: Response): Promise<void> {
    return this.endpoint.handle(request, response);
  }
}
