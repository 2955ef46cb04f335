import { Body, Controller, HttpCode, Param, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { IngestOnly } from '../../../identity/auth.decorators';
import { UuidParam } from '../../../common/uuid-param';
import { MailboxSyncDto } from './mailbox-health.dto';
import { MailboxHealthService } from './mailbox-health.service';

/** What the mailbox sync calls after each sync of an email account. */
@ApiTags('ingest')
@ApiBearerAuth()
@IngestOnly()
@Controller('ingest/email-accounts')
export class MailboxHealthController {
  constructor(private readonly health: MailboxHealthService) {}

  /** 200 with the mailbox's health; 404 when the line is not a live email account. */
  @Post(':lineId/sync')
  @HttpCode(200)
  sync(@Param('lineId', UuidParam('lineId')) lineId: string, @Body() body: MailboxSyncDto) {
    return this.health.recordSync(lineId, body);
  }
}
