import { Body, Controller, HttpCode, Param, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { Principal } from '../identity/principal';
import { CurrentPrincipal, KeyAction } from '../identity/auth.decorators';
import { UuidParam } from '../common/uuid-param';
import { CreateTurnDto, RejectTurnDto } from './agents.dto';
import { AgentsService } from './agents.service';

/**
 * The agent runtime's REST surface (API key, the key's line scope applies). Each route is also a
 * tool (create_agent_turn, approve_agent_turn, reject_agent_turn); both call the same service, and
 * both need the key's `send` permission and count against its rate and running-calls limits.
 */
@ApiTags('agents')
@ApiBearerAuth()
@Controller('api')
export class AgentsController {
  constructor(private readonly agents: AgentsService) {}

  @Post('agents/:agentId/turns')
  @KeyAction('send')
  async createTurn(@Param('agentId', UuidParam('agentId')) agentId: string, @Body() body: CreateTurnDto, @CurrentPrincipal() caller: Principal) {
    return { turn: await this.agents.createTurn(caller, agentId, body) };
  }

  @Post('agent-turns/:turnId/approve')
  @KeyAction('send')
  @HttpCode(200)
  async approve(@Param('turnId', UuidParam('turnId')) turnId: string, @CurrentPrincipal() caller: Principal) {
    return { turn: await this.agents.approve(caller, turnId) };
  }

  @Post('agent-turns/:turnId/reject')
  @KeyAction('send')
  @HttpCode(200)
  async reject(@Param('turnId', UuidParam('turnId')) turnId: string, @Body() body: RejectTurnDto, @CurrentPrincipal() caller: Principal) {
    return { turn: await this.agents.reject(caller, turnId, body.reason) };
  }
}
