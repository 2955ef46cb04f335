import { ApiProperty, ApiPropertyOptional, ApiPropertyOptions } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsBoolean,
  IsDate,
  IsDefined,
  IsIn,
  IsInt,
  IsNotEmpty,
  IsOptional,
  IsString,
  Matches,
  Max,
  MaxLength,
  Min,
  Validate,
  ValidateIf,
  ValidateBy,
  ValidateNested,
  ValidationArguments,
  ValidatorConstraint,
  ValidatorConstraintInterface,
} from 'class-validator';
import { IsEmailAddress, isEmailAddress } from '../../common/email-address';
import { E164, LINE_TYPES, LineType, ORG_TIERS, OrgTier } from '../../identity/account.types';
import { API_KEY_NAME_MAX_LENGTH, ApiKeyNameRule, KeyPermissionsRule } from '../../auth/api-key-rules';
import { KEY_PERMISSIONS, KeyPermission } from '../../identity/key-permissions';
import { USER_ROLES, UserRole } from '../../identity/roles';
import { SMS_PROVIDERS, SmsProviderKind } from '../../channels/sms/sms-provider.entity';

/** A line's address must fit its type: an email address, or an E.164 phone number. */
@ValidatorConstraint({ name: 'lineAddress' })
class LineAddressRule implements ValidatorConstraintInterface {
  validate(address: unknown, args: ValidationArguments): boolean {
    if (typeof address !== 'string') return false;
    const type = (args.object as CreateLineDto).type;
    return type === 'EMAIL_ACCOUNT' ? isEmailAddress(address) : E164.test(address);
  }

  defaultMessage(args: ValidationArguments): string {
    return (args.object as CreateLineDto).type === 'EMAIL_ACCOUNT'
      ? 'address must be an email address for an EMAIL_ACCOUNT line'
      : 'address must be an E.164 phone number (e.g. +15551230001) for a PHONE_NUMBER line';
  }
}

@ValidatorConstraint({ name: 'onlyWithLinesMode' })
class OnlyWithLinesModeRule implements ValidatorConstraintInterface {
  validate(_: unknown, args: ValidationArguments): boolean {
    return (args.object as ChannelAccessDto).mode === 'LINES';
  }

  defaultMessage(): string {
    return 'lines is only allowed with mode LINES';
  }
}

export class CreateOrgDto {
  @ApiProperty({ example: 'Acme Dental' })
  @IsString()
  @IsNotEmpty()
  @MaxLength(200)
  name: string;

  @ApiProperty({ enum: ORG_TIERS })
  @IsIn(ORG_TIERS)
  tier: OrgTier;
}

/** Absent fields stay as they are; `null` is refused like any other wrong value (not a 500). */
const unlessAbsent = ValidateIf((_: object, value: unknown) => value !== undefined);

export class UpdateOrgDto {
  @ApiPropertyOptional()
  @unlessAbsent
  @IsString()
  @IsNotEmpty()
  @MaxLength(200)
  name?: string;

  @ApiPropertyOptional({ enum: ORG_TIERS })
  @unlessAbsent
  @IsIn(ORG_TIERS)
  tier?: OrgTier;
}

export class CreateUserDto {
  @ApiProperty({ example: 'owner@example.com' })
  @IsEmailAddress()
  email: string;

  @ApiProperty({ example: 'Olivia Owner' })
  @IsString()
  @IsNotEmpty()
  @MaxLength(200)
  displayName: string;

  @ApiProperty({ enum: USER_ROLES })
  @IsIn(USER_ROLES)
  role: UserRole;
}

export class CreateLineDto {
  @ApiProperty({ enum: LINE_TYPES })
  @IsIn(LINE_TYPES)
  type: LineType;

  @ApiProperty({ description: 'An email address for EMAIL_ACCOUNT, an E.164 number for PHONE_NUMBER', example: '+15551230001' })
  @IsString()
  @MaxLength(320)
  @Validate(LineAddressRule)
  address: string;
}

export class UpdateLineDto {
  @ApiProperty({
    description:
      'PHONE_NUMBER lines: true if the carrier reports delivery later (QUEUED → SENT, then DELIVERED/FAILED); false to mark messages DELIVERED at hand-off',
  })
  @IsBoolean()
  smsDeliveryReports: boolean;
}

/** A key allowlist entry: a line's address, judged by the line rules (an E.164 number or the one email rule). */
const isLineAddress = (value: unknown): boolean => isEmailAddress(value) || (typeof value === 'string' && E164.test(value));

export class ChannelAccessDto {
  @ApiProperty({ enum: ['ALL', 'LINES'] })
  @IsIn(['ALL', 'LINES'])
  mode: 'ALL' | 'LINES';

  @ApiPropertyOptional({
    type: [String],
    description: 'With mode LINES: email addresses and E.164 phone numbers',
    example: ['+15551230001', 'ops@example.com'],
  })
  @ValidateIf((o: ChannelAccessDto) => o.mode === 'LINES' || o.lines !== undefined)
  @Validate(OnlyWithLinesModeRule)
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(500)
  @ValidateBy(
    { name: 'isLineAddress', validator: { validate: isLineAddress } },
    { each: true, message: 'each entry of lines must be an email address or an E.164 phone number' },
  )
  lines?: string[];
}

const PERMISSIONS_PROPERTY = {
  enum: [...KEY_PERMISSIONS],
  isArray: true,
  minItems: 1,
  uniqueItems: true,
  example: ['read'],
  description:
    'What the key may do beside its lines, never more than its user may (docs/mcp.md, "Key permissions"): read (the read tools), send (every other write: sends, replies, contacts, labels, agent turns), webhooks (every webhook and delivery tool).',
} satisfies ApiPropertyOptions;

export class CreateApiKeyDto {
  @ApiProperty({ example: 'support agent', maxLength: API_KEY_NAME_MAX_LENGTH })
  @Validate(ApiKeyNameRule)
  name: string;

  @ApiPropertyOptional({ type: ChannelAccessDto, description: 'Defaults to {mode: "ALL"}' })
  @IsOptional()
  @ValidateNested()
  @Type(() => ChannelAccessDto)
  channelAccess?: ChannelAccessDto;

  @ApiPropertyOptional({ ...PERMISSIONS_PROPERTY, description: `${PERMISSIONS_PROPERTY.description} Defaults to all three.` })
  @unlessAbsent
  @Validate(KeyPermissionsRule)
  permissions?: KeyPermission[];
}

/** Give channelAccess, permissions or both; what is left out stays as it is. */
export class UpdateApiKeyDto {
  @ApiPropertyOptional({ type: ChannelAccessDto })
  @ValidateIf((o: UpdateApiKeyDto) => o.channelAccess !== undefined || o.permissions === undefined)
  @IsDefined({ message: 'channelAccess or permissions must be given: the change to make' })
  @ValidateNested()
  @Type(() => ChannelAccessDto)
  channelAccess?: ChannelAccessDto;

  @ApiPropertyOptional(PERMISSIONS_PROPERTY)
  @unlessAbsent
  @Validate(KeyPermissionsRule)
  permissions?: KeyPermission[];
}

export class SetEndpointCapDto {
  @ApiProperty({ minimum: 0, maximum: 1000 })
  @IsInt()
  @Min(0)
  @Max(1000)
  maxEndpointsPerUser: number;

  @ApiProperty({ example: 'enterprise pilot, ticket #4411' })
  @IsString()
  @IsNotEmpty()
  @MaxLength(500)
  reason: string;

  @ApiPropertyOptional({ type: String, format: 'date-time' })
  @IsOptional()
  @Type(() => Date)
  @IsDate({ message: 'expiresAt must be an ISO 8601 date-time' })
  expiresAt?: Date;
}

export class SetSmsHelpTextDto {
  @ApiProperty({
    maxLength: 320,
    example: 'Northwind Plumbing: call +1 555 123 0000 or reply STOP to opt out.',
    description: 'What an inbound HELP is answered with',
  })
  @IsString()
  @IsNotEmpty()
  @MaxLength(320)
  helpText: string;
}

export class SetAttachmentQuotaDto {
  @ApiProperty({ minimum: 0, maximum: 2 ** 50, example: 10 * 1024 ** 3, description: 'Attachment bytes the org may store' })
  @IsInt()
  @Min(0)
  @Max(2 ** 50)
  quotaBytes: number;
}

const RETENTION_DAYS_MESSAGE = "days must be a whole number of days from 1 to DELIVERY_LOG_RETENTION_DAYS (the installation's retention)";

export class SetDeliveryLogRetentionDto {
  @ApiProperty({
    minimum: 1,
    maximum: 3650,
    example: 7,
    description: "Days the org's finished webhook deliveries are kept (at most DELIVERY_LOG_RETENTION_DAYS)",
  })
  // One message for each way it can be wrong: which of the three class-validator reports first is not the one that failed first.
  @IsInt({ message: RETENTION_DAYS_MESSAGE })
  @Min(1, { message: RETENTION_DAYS_MESSAGE })
  @Max(3650, { message: RETENTION_DAYS_MESSAGE })
  days: number;
}

export class RemoveEndpointCapDto {
  @ApiPropertyOptional({ example: 'pilot ended' })
  @IsOptional()
  @IsString()
  @IsNotEmpty()
  @MaxLength(500)
  reason?: string;
}

export class ConnectSmsProviderDto {
  @ApiProperty({ enum: SMS_PROVIDERS, description: 'twilio: Twilio, or a provider with a Twilio-compatible API (TWILIO_API_BASE_URL)' })
  @IsIn(SMS_PROVIDERS)
  provider: SmsProviderKind;

  @ApiProperty({ example: 'AC0123456789abcdef0123456789abcdef', description: 'The Account SID, from the console' })
  @IsString()
  @Matches(/^[A-Za-z0-9_-]{1,64}$/, { message: 'accountSid must be an Account SID such as AC0123456789abcdef0123456789abcdef' })
  accountSid: string;

  @ApiProperty({ writeOnly: true, description: 'The auth token, from the console: sealed with SECRETS_KEY, never returned' })
  @IsString()
  @Matches(/^\S{1,256}$/, { message: 'authToken must be the auth token: 1 to 256 characters without spaces' })
  authToken: string;
}
