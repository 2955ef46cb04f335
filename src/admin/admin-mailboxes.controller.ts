import { Body, Controller, Delete, Get, HttpCode, Param, Put } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminOnly } from '../identity/auth.decorators';
import { UuidParam } from '../common/uuid-param';
import { MailboxesService } from '../channels/email/mailboxes/mailboxes.service';
import { ConnectMailboxDto } from '../channels/email/mailboxes/mailbox-settings.dto';

@ApiTags('admin: mailboxes')
@ApiBearerAuth()
@AdminOnly()
@Controller('admin/lines/:lineId/mailbox')
export class AdminMailboxesController {
  constructor(private readonly mailboxes: MailboxesService) {}

  @Put()
  @ApiOperation({
    summary: "Connects an email account line to its mailbox's IMAP and SMTP servers (or replaces the connection)",
    description:
      'Both servers must pass the address policy and accept the login before anything is saved: 400 names a refused field, ' +
      '422 says which server failed and why (auth, connection, tls, timeout). Passwords are sealed and never returned.',
  })
  connect(@Param('lineId', UuidParam('lineId')) lineId: string, @Body() body: ConnectMailboxDto) {
    return this.mailboxes.connect(lineId, body);
  }

  @Get()
  @ApiOperation({ summary: "The line's mailbox connection, without passwords" })
  get(@Param('lineId', UuidParam('lineId')) lineId: string) {
    return this.mailboxes.get(lineId);
  }

  @Delete()
  @HttpCode(204)
  @ApiOperation({ summary: 'Disconnects the mailbox: its stored credentials are deleted' })
  async disconnect(@Param('lineId', UuidParam('lineId')) lineId: string): Promise<void> {
    await this.mailboxes.disconnect(lineId);
  }
}
