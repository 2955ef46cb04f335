import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsOptional, IsString, Matches, MaxLength } from 'class-validator';

/** A mailbox sync's report of how its last run went (POST /ingest/email-accounts/:lineId/sync). */
export class MailboxSyncDto {
  @ApiProperty({ description: 'Whether this sync of the mailbox worked' })
  @IsBoolean()
  ok: boolean;

  @ApiPropertyOptional({ example: 'AUTH', description: 'AUTH, RATE_LIMIT, NETWORK or another kind' })
  @IsOptional()
  @Matches(/^[A-Z][A-Z0-9_]{0,49}$/, { message: 'errorKind must be an upper-case kind such as AUTH or NETWORK' })
  errorKind?: string;

  @ApiPropertyOptional()
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  error?: string;
}
