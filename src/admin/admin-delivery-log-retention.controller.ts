import { Body, Controller, Delete, Get, Param, Put } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminOnly } from '../identity/auth.decorators';
import { UuidParam } from '../common/uuid-param';
import { OrgDeliveryLogRetention } from '../delivery/org-delivery-log-retention';
import { SetDeliveryLogRetentionDto } from './dto/admin.dto';

@ApiTags('admin: delivery log')
@ApiBearerAuth()
@AdminOnly()
@Controller('admin/orgs/:orgId/delivery-log-retention')
export class AdminDeliveryLogRetentionController {
  constructor(private readonly retention: OrgDeliveryLogRetention) {}

  @Get()
  @ApiOperation({ summary: "The org's delivery log retention in days, and where it comes from (DELIVERY_LOG_RETENTION_DAYS or the org's own)" })
  get(@Param('orgId', UuidParam('orgId')) orgId: string) {
    return this.retention.report(orgId);
  }

  @Put()
  @ApiOperation({
    summary: "Keeps the org's finished deliveries fewer days than DELIVERY_LOG_RETENTION_DAYS (at most that many); older ones go at the next retention run",
  })
  set(@Param('orgId', UuidParam('orgId')) orgId: string, @Body() body: SetDeliveryLogRetentionDto) {
    return this.retention.set(orgId, body.days);
  }

  @Delete()
  @ApiOperation({ summary: "Removes the org's own retention: the org is back on DELIVERY_LOG_RETENTION_DAYS" })
  remove(@Param('orgId', UuidParam('orgId')) orgId: string) {
    return this.retention.set(orgId, null);
  }
}
