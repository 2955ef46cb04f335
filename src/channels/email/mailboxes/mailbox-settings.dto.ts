import { ApiProperty } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsDefined, IsIn, IsInt, IsString, Length, Matches, Max, Min, ValidateNested } from 'class-validator';
import { Judged, validateAs } from '../../../common/validation';
import { MailServerSettings } from './mail-servers';
import { MAIL_TLS_MODES, MailTls } from './mailbox.entity';
import { MailboxSettingsInput } from './mailboxes.service';

/** One server of a mailbox connection, as the admin API's body and the Mailboxes page give it. */
export class MailServerDto implements MailServerSettings {
  @ApiProperty({ example: 'imap.example.com' })
  @IsString()
  @Matches(/^[A-Za-z0-9.-]{1,253}$/, { message: 'host must be a host name or an IPv4 address' })
  host: string;

  @ApiProperty({ example: 993 })
  @IsInt()
  @Min(1)
  @Max(65535)
  port: number;

  @ApiProperty({ enum: MAIL_TLS_MODES, description: 'implicit (TLS from the start), starttls, or none (development only)' })
  @IsIn(MAIL_TLS_MODES)
  tls: MailTls;

  @ApiProperty({ example: 'support@example.com' })
  @IsString()
  @Length(1, 320)
  username: string;

  @ApiProperty({ writeOnly: true, description: 'Sealed with SECRETS_KEY; never returned' })
  @IsString()
  @Length(1, 1024)
  password: string;
}

/** The rules a mailbox connection's settings must pass before the service tries the logins: one set for every surface. */
export class ConnectMailboxDto implements MailboxSettingsInput {
  @ApiProperty({ type: MailServerDto })
  @IsDefined()
  @ValidateNested()
  @Type(() => MailServerDto)
  imap: MailServerDto;

  @ApiProperty({ type: MailServerDto })
  @IsDefined()
  @ValidateNested()
  @Type(() => MailServerDto)
  smtp: MailServerDto;
}

/**
 * Settings from a surface that reads no JSON body (the Mailboxes page's form, as
 * `{imap: {host, port, ...}, smtp: {...}}`), judged by ConnectMailboxDto's rules as the admin
 * API judges its body: the service's input when they pass, otherwise every problem with its field.
 */
export function readMailboxSettings(value: object): Promise<Judged<MailboxSettingsInput>> {
  return validateAs(ConnectMailboxDto, value);
}
