import { Body, Controller, Delete, Get, Param, Put } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminOnly } from '../identity/auth.decorators';
import { UuidParam } from '../common/uuid-param';
import { AttachmentStorage } from '../attachments/attachment-storage';
import { SetAttachmentQuotaDto } from './dto/admin.dto';

@ApiTags('admin: attachment storage')
@ApiBearerAuth()
@AdminOnly()
@Controller('admin/orgs/:orgId/attachment-quota')
export class AdminAttachmentQuotaController {
  constructor(private readonly storage: AttachmentStorage) {}

  @Get()
  @ApiOperation({ summary: "The org's attachment storage: its quota, where the quota comes from (default or org), and the bytes stored" })
  get(@Param('orgId', UuidParam('orgId')) orgId: string) {
    return this.storage.report(orgId);
  }

  @Put()
  @ApiOperation({ summary: "Sets the org's own quota in bytes (instead of ATTACHMENT_QUOTA_BYTES_PER_ORG); bytes already stored stay" })
  set(@Param('orgId', UuidParam('orgId')) orgId: string, @Body() body: SetAttachmentQuotaDto) {
    return this.storage.setQuota(orgId, body.quotaBytes);
  }

  @Delete()
  @ApiOperation({ summary: 'Removes the org quota: the org is back on ATTACHMENT_QUOTA_BYTES_PER_ORG' })
  remove(@Param('orgId', UuidParam('orgId')) orgId: string) {
    return this.storage.setQuota(orgId, null);
  }
}
