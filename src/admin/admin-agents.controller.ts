import { Body, Controller, Param, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { AdminOnly } from '../identity/auth.decorators';
import { UuidParam } from '../common/uuid-param';
import { CreateAgentDto } from '../agents/agents.dto';
import { AgentsService } from '../agents/agents.service';

@ApiTags('admin: agents')
@ApiBearerAuth()
@AdminOnly()
@Controller('admin')
export class AdminAgentsController {
  constructor(private readonly agents: AgentsService) {}

  /** A new agent on a line: DRAFT replies wait for approval; AUTO and SUPERVISED replies are sent at once. */
  @Post('lines/:lineId/agents')
  createAgent(@Param('lineId', UuidParam('lineId')) lineId: string, @Body() body: CreateAgentDto) {
    return this.agents.createAgent(lineId, body);
  }
}
