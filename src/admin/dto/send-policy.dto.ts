import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, IsArray, IsBoolean, IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min, ValidateIf } from 'class-validator';
import { HH_MM, LIMIT_MAX, LIST_MAX } from '../../send-policies/send-policy-rules';

/**
 * A send policy as PUT replaces it (docs/send-policies.md): every field, an absent or null one is
 * "no such rule" for the org's policy and "the org's value" for a credential's override. Types are
 * checked here; what the values mean (the zone, the list entries, quiet hours' pair) by the service.
 */
export class SendPolicyDto {
  @ApiPropertyOptional({
    type: Number,
    nullable: true,
    minimum: 0,
    maximum: LIMIT_MAX,
    description: "Sends per credential in the last hour (the credential's messages, SCHEDULED ones not counted)",
  })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(LIMIT_MAX)
  maxPerHour?: number | null;

  @ApiPropertyOptional({ type: Number, nullable: true, minimum: 0, maximum: LIMIT_MAX, description: 'Sends per credential in the last 24 hours' })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(LIMIT_MAX)
  maxPerDay?: number | null;

  @ApiPropertyOptional({
    type: Number,
    nullable: true,
    minimum: 0,
    maximum: LIMIT_MAX,
    description: "A credential's sends to one recipient in the last 24 hours",
  })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(LIMIT_MAX)
  maxPerRecipientPerDay?: number | null;

  @ApiPropertyOptional({ type: String, nullable: true, example: '21:00', description: 'Quiet hours start (local HH:MM in timeZone); with quietEnd' })
  @IsOptional()
  @ValidateIf((_, value) => value !== null)
  @Matches(HH_MM, { message: 'quietStart must be a local time HH:MM (00:00 to 23:59)' })
  quietStart?: string | null;

  @ApiPropertyOptional({
    type: String,
    nullable: true,
    example: '08:00',
    description: 'Quiet hours end (local HH:MM); may be before quietStart (the window crosses midnight)',
  })
  @IsOptional()
  @ValidateIf((_, value) => value !== null)
  @Matches(HH_MM, { message: 'quietEnd must be a local time HH:MM (00:00 to 23:59)' })
  quietEnd?: string | null;

  @ApiPropertyOptional({
    type: String,
    nullable: true,
    example: 'America/New_York',
    description: "IANA time zone of quiet hours; null: UTC (org), the org's (override)",
  })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  timeZone?: string | null;

  @ApiPropertyOptional({
    type: [String],
    nullable: true,
    example: ['+1415', 'example.com'],
    description: 'When non-empty, only these recipients: E.164 prefixes, email domains or addresses',
  })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(LIST_MAX)
  @IsString({ each: true })
  allowList?: string[] | null;

  @ApiPropertyOptional({ type: [String], nullable: true, example: ['+1900', 'a@example.com'], description: 'Never these recipients (deny wins over allow)' })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(LIST_MAX)
  @IsString({ each: true })
  denyList?: string[] | null;

  @ApiPropertyOptional({ type: Boolean, nullable: true, description: 'Only recipients who wrote to the sending line first' })
  @IsOptional()
  @IsBoolean()
  repliesOnly?: boolean | null;
}

export class SendPolicyResponse extends SendPolicyDto {
  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'Last change; null when never set' })
  updatedAt: Date | null;
}

export class PolicyCredentialResponse {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ enum: ['API_KEY', 'OAUTH_GRANT'] }) kind: 'API_KEY' | 'OAUTH_GRANT';
  @ApiProperty({ description: "The key's name, or the app's client_name" }) name: string;
  @ApiProperty() ownerEmail: string;
}

export class SendPolicyOverrideResponse {
  @ApiProperty({ type: PolicyCredentialResponse }) credential: PolicyCredentialResponse;
  @ApiProperty({ type: SendPolicyResponse, nullable: true, description: 'The override; null when the credential has none' })
  override: SendPolicyResponse | null;
  @ApiProperty({ type: SendPolicyDto, description: "The org's policy (every field null when none)" }) org: SendPolicyDto;
  @ApiProperty({ type: SendPolicyDto, description: 'What the credential is held to: the override over the org policy' }) effective: SendPolicyDto;
}
