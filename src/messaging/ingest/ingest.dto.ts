import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsBase64, IsBoolean, IsIn, IsNotEmpty, IsOptional, IsString, Matches, MaxLength, ValidateNested } from 'class-validator';
import { E164 } from '../../accounts/account.types';

export class InboundMediaDto {
  @ApiProperty({ example: 'photo.png' })
  @IsString()
  @IsNotEmpty()
  @MaxLength(255)
  filename: string;

  @ApiProperty({ example: 'image/png' })
  @IsString()
  @Matches(/^[\w.+-]+\/[\w.+-]+$/, { message: 'mimeType must be a MIME type such as image/png' })
  mimeType: string;

  @ApiProperty({ description: 'The file, base64-encoded' })
  @IsBase64({}, { message: 'contentBase64 must be base64' })
  contentBase64: string;
}

export class InboundSmsDto {
  @ApiProperty({ example: '+15551230001', description: 'Our line' })
  @Matches(E164, { message: 'to must be an E.164 phone number' })
  to: string;

  @ApiProperty({ example: '+15557654321' })
  @Matches(E164, { message: 'from must be an E.164 phone number' })
  from: string;

  @ApiProperty()
  @IsString()
  @MaxLength(10_000)
  body: string;

  @ApiProperty({ description: "The carrier's id for this message; a repeat with the same id creates nothing" })
  @IsString()
  @IsNotEmpty()
  @MaxLength(200)
  providerMessageId: string;

  @ApiPropertyOptional({ type: [InboundMediaDto] })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(10)
  @ValidateNested({ each: true })
  @Type(() => InboundMediaDto)
  media?: InboundMediaDto[];
}

export class SmsStatusDto {
  @ApiProperty()
  @IsString()
  @IsNotEmpty()
  @MaxLength(200)
  providerMessageId: string;

  @ApiProperty({ enum: ['DELIVERED', 'FAILED'] })
  @IsIn(['DELIVERED', 'FAILED'])
  status: 'DELIVERED' | 'FAILED';

  @ApiPropertyOptional()
  @IsOptional()
  @IsString()
  @MaxLength(1000)
  error?: string;
}

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
