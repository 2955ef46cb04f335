import { ApiProperty } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { IsUuid } from '../common/uuid';
import { AGENT_MODES, AgentMode, BODY_MAX, REJECTION_REASON_MAX } from './agent.types';

export class CreateAgentDto {
  @ApiProperty({ example: 'Front desk' })
  @IsString()
  @MaxLength(200)
  @Matches(/\S/, { message: 'name must not be blank' })
  name: string;

  @ApiProperty({ enum: AGENT_MODES })
  @IsIn(AGENT_MODES, { message: `mode must be one of ${AGENT_MODES.join(', ')}` })
  mode: AgentMode;
}

export class CreateTurnDto {
  @ApiProperty({ format: 'uuid', description: "A thread on the agent's line" })
  @IsUuid({ message: 'threadId must be a UUID' })
  threadId: string;

  @ApiProperty({ description: `The reply; at most ${BODY_MAX} characters (1600 on SMS threads)` })
  @IsString()
  @MaxLength(BODY_MAX)
  @Matches(/\S/, { message: 'body must not be blank' })
  body: string;
}

export class RejectTurnDto {
  @ApiProperty({
    required: false,
    maxLength: REJECTION_REASON_MAX,
    description: 'Why the draft is rejected: kept on the turn (rejectionReason) and carried by agent_turn.rejected',
  })
  @IsOptional()
  @IsString({ message: 'reason must be a string' })
  @MaxLength(REJECTION_REASON_MAX, { message: `reason must be at most ${REJECTION_REASON_MAX} characters` })
  reason?: string;
}
