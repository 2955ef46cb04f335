import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsBase64, IsIn, IsNotEmpty, IsOptional, IsString, Matches, MaxLength, ValidateNested } from 'class-validator';
import { E164 } from '../../identity/account.types';

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
