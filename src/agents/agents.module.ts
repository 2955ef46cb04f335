import { Module } from '@nestjs/common';
import { ConversationsModule } from '../conversations/conversations.module';
import { AgentsController } from './agents.controller';
import { AgentsRepository } from './agents.repository';
import { AgentsService } from './agents.service';
import { ApproveAgentTurnTool, CreateAgentTurnTool, GetAgentTurnTool, ListAgentsTool, ListAgentTurnsTool, RejectAgentTurnTool } from './agents.tools';

/** Agents per line and their turns: the agent runtime's routes, the approval tools, agent_turn.* events. */
@Module({
  imports: [ConversationsModule],
  controllers: [AgentsController],
  providers: [
    AgentsRepository,
    AgentsService,
    ListAgentsTool,
    ListAgentTurnsTool,
    GetAgentTurnTool,
    CreateAgentTurnTool,
    ApproveAgentTurnTool,
    RejectAgentTurnTool,
  ],
  exports: [AgentsService],
})
export class AgentsModule {}
